#!/usr/bin/env -S /usr/bin/python3
"""Export models the way PyTorch users export them, for tensoropt's tests.

Run with the Debian interpreter (/usr/bin/python3: python3-torch 1.13,
python3-torchvision 0.14, python3-onnx 1.12):

    models/user_exports.py [--out DIR] [--only name,name]   small spread
    models/user_exports.py --check [--only ...]             re-export and compare
    models/user_exports.py --full [--out DIR]               full-size (not committed)

Unlike models/export.py (weightless, training mode, dynamic batch, opset 17
everywhere), every file here is a plain `torch.onnx.export(model, example,
path, ...)` as tutorials write it: weights inside the file by default, the
example's batch baked in unless dynamic_axes says otherwise, eval mode with
constant folding unless the entry is a training-mode export
(training=TrainingMode.TRAINING, do_constant_folding=False).  Variants:
weights inline / external data (onnx.save_model(save_as_external_data=True)
after the export; the .data is committed) / graph inputs (export_params=False),
static or dynamic batch ({'input': {0: 'batch'}, 'output': {0: 'batch'}}),
opsets 11 to 17.  Models are small configurations of the real module classes.

Parameters (and float buffers) are perturbed by 1e-3 noise after the seeded
init, as a trained model's would be: a fresh init's equal tensors (LayerNorm
weights all 1, zero biases) are merged by the eval-mode exporter (it
deduplicates initializers by value).  Entries marked fresh_init skip that, to
keep one file showing what a fresh model looks like.

Sizes are chosen so that the numbers a static export bakes into its Reshape
and Expand shapes (batch, sequence, heads, head size, batch*heads, ...) differ
from each other, so a re-batching importer can be tested without
coincidences (e.g. the encoder's [T, B*h, hd] = [12, 32, 8] at batch 4).

manifest.json (keys sorted) describes every file: mode, weights, batch,
opset, inputs/outputs, PyTorch's parameter and buffer counts, and what the
graph holds (read back with onnx).  --check re-exports everything into a
temporary directory and compares bytes, and runs onnx.checker on each file.
"""

import argparse
import filecmp
import json
import os
import shutil
import sys
import tempfile
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.models as tvm
from torchvision.models.densenet import DenseNet
from torchvision.models.resnet import BasicBlock, ResNet
from torchvision.models.shufflenetv2 import ShuffleNetV2
from torchvision.models.swin_transformer import SwinTransformer
from torchvision.models.vision_transformer import VisionTransformer

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(REPO, "tests", "fixtures", "user_exports")
FULL_OUT = "/tmp/tensoropt-user-exports"
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16}
DTYPES = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.INT64: "int64",
          onnx.TensorProto.BOOL: "bool"}


# ----------------------------------------------------------------------------
# Models written the way users write them
# ----------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    """nanoGPT-style: one qkv Linear, view(B, T, h, d), masked_fill with a
    registered tril buffer, reshape(B, T, -1) at the end."""

    def __init__(self, d, n_head, ctx, dropout):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx))
                             .view(1, 1, ctx, ctx))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        hd = C // self.n_head
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, -1)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, d, n_head, ctx, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head, ctx, dropout)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                 nn.Linear(4 * d, d), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """GPT decoder from nn.Embedding/nn.Linear/nn.LayerNorm, tied LM head."""

    def __init__(self, vocab=256, ctx=32, d=48, n_head=3, n_layer=2,
                 dropout=0.1):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(d, n_head, ctx, dropout)
                               for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class EncoderClassifier(nn.Module):
    """nn.TransformerEncoder over [B, T, d] features (the issue's case)."""

    def __init__(self, d=64, nhead=8, ff=128, layers=2, num_classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, nhead, ff, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers)
        self.head = nn.Linear(d, num_classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


class Seq2Seq(nn.Module):
    """nn.Transformer with a causal target mask made in forward."""

    def __init__(self, d=64, nhead=4, ff=128):
        super().__init__()
        self.transformer = nn.Transformer(d, nhead, 1, 1, ff, batch_first=True)
        self.out = nn.Linear(d, d)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.out(self.transformer(src, tgt, tgt_mask=mask))


class Decoder(nn.Module):
    """nn.TransformerDecoder: target tokens attend to an encoder memory."""

    def __init__(self, vocab=128, d=64, nhead=4, ff=128, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerDecoderLayer(d, nhead, ff, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens, memory):
        return self.head(self.decoder(self.emb(tokens), memory))


class MHASelf(nn.Module):
    """nn.MultiheadAttention used directly, self-attention, packed in_proj."""

    def __init__(self, d=64, nhead=8, num_classes=10):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, nhead, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, num_classes)

    def forward(self, x):
        a, _ = self.attn(x, x, x, need_weights=False)
        return self.head(self.norm(x + a))


class MHACross(nn.Module):
    """nn.MultiheadAttention with kdim/vdim != embed_dim: separate
    q_proj_weight/k_proj_weight/v_proj_weight, attention weights returned."""

    def __init__(self, d=64, kd=32, nhead=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, nhead, kdim=kd, vdim=kd,
                                          batch_first=True)

    def forward(self, x, memory):
        a, w = self.attn(x, memory, memory)
        return a + x, w


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Dropout(0.2), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def narrow_resnet(widths=(8, 16, 32, 64)):
    """torchvision ResNet(BasicBlock, [1, 1, 1, 1]) with its stage widths
    narrowed (the class hard-codes 64..512): the real forward and blocks."""
    m = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)
    m.inplanes = widths[0]
    m.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
    m.bn1 = nn.BatchNorm2d(widths[0])
    for i, w in enumerate(widths):
        setattr(m, f"layer{i + 1}",
                m._make_layer(BasicBlock, w, 1, stride=1 if i == 0 else 2))
    m.fc = nn.Linear(widths[-1], 10)
    return m


def small_vit():
    return VisionTransformer(image_size=32, patch_size=4, num_layers=2,
                             num_heads=2, hidden_dim=48, mlp_dim=96,
                             num_classes=10)


def no_stochastic_depth(make):
    """torchvision's own constructor, then StochasticDepth p = 0 (swin_t
    passes its own stochastic_depth_prob, so it cannot be given)."""
    def build():
        m = make()
        for mod in m.modules():
            if type(mod).__name__ == "StochasticDepth":
                mod.p = 0.0
        return m
    return build


def small_swin():
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                           num_heads=[2, 4], window_size=[4, 4],
                           stochastic_depth_prob=0.0, num_classes=10)


# ----------------------------------------------------------------------------
# The spread
# ----------------------------------------------------------------------------

def img(hw):
    return [("input", [3, hw, hw], torch.float32)]


def seq(t, d):
    return [("input", [t, d], torch.float32)]


def tokens(t, vocab):
    return [("input", [t], (torch.int64, vocab))]


NOSD = ("StochasticDepth p=0: torch 1.13 cannot export its bernoulli_ in "
        "training mode")
TV = "torchvision "
# model key: (family, constructor, example inputs without the batch, source)
MODELS = {
    "resnet_narrow": ("resnet", narrow_resnet, img(64), TV +
                      "ResNet(BasicBlock, [1,1,1,1], num_classes=10), stage "
                      "widths narrowed to 8/16/32/64"),
    "resnet_1111": ("resnet", lambda: ResNet(BasicBlock, [1, 1, 1, 1],
                                             num_classes=10), img(64),
                    TV + "ResNet(BasicBlock, [1,1,1,1], num_classes=10)"),
    "resnet50": ("resnet", lambda: tvm.resnet50(num_classes=10), img(64),
                 TV + "resnet50(num_classes=10)"),
    "mobilenet_v2": ("mobilenet_v2", lambda: tvm.mobilenet_v2(
        width_mult=0.25, num_classes=10), img(64),
        TV + "mobilenet_v2(width_mult=0.25, num_classes=10)"),
    "shufflenet_x0_5": ("shufflenet_v2", lambda: tvm.shufflenet_v2_x0_5(
        num_classes=10), img(64), TV + "shufflenet_v2_x0_5(num_classes=10)"),
    "shufflenet_512": ("shufflenet_v2", lambda: ShuffleNetV2(
        [4, 8, 4], [24, 48, 96, 192, 512], num_classes=10), img(64),
        TV + "ShuffleNetV2([4,8,4], [24,48,96,192,512], num_classes=10): "
        "x0_5 with conv5 at 512 channels instead of 1024 (file size)"),
    "squeezenet": ("squeezenet", lambda: tvm.squeezenet1_1(num_classes=10),
                   img(64), TV + "squeezenet1_1(num_classes=10)"),
    "densenet": ("densenet", lambda: DenseNet(12, (2, 2, 2), 24, bn_size=2,
                                              num_classes=10), img(32),
                 TV + "DenseNet(growth_rate=12, block_config=(2,2,2), "
                 "num_init_features=24, bn_size=2, num_classes=10)"),
    "googlenet": ("googlenet", lambda: tvm.GoogLeNet(
        num_classes=10, aux_logits=False, init_weights=False), img(64),
        TV + "GoogLeNet(num_classes=10, aux_logits=False, init_weights=False)"),
    "encoder": ("transformer_encoder", EncoderClassifier, seq(12, 64),
                "EncoderClassifier: nn.TransformerEncoder(TransformerEncoder"
                "Layer(64, 8, 128, batch_first=True), 2) + mean + Linear"),
    "seq2seq": ("transformer", Seq2Seq, [("src", [12, 64], torch.float32),
                                         ("tgt", [10, 64], torch.float32)],
                "Seq2Seq: nn.Transformer(64, 4, 1, 1, 128, batch_first=True)"
                " + Linear, generate_square_subsequent_mask in forward"),
    "decoder": ("transformer_decoder", Decoder,
                [("input", [10], (torch.int64, 128)),
                 ("memory", [12, 64], torch.float32)],
                "Decoder: Embedding(128, 64) + nn.TransformerDecoder("
                "TransformerDecoderLayer(64, 4, 128, batch_first=True), 2) "
                "+ Linear"),
    "mha_self": ("multihead_attention", MHASelf, seq(12, 64),
                 "MHASelf: nn.MultiheadAttention(64, 8, batch_first=True) + "
                 "LayerNorm + Linear"),
    "mha_cross": ("multihead_attention", MHACross,
                  [("input", [10, 64], torch.float32),
                   ("memory", [12, 32], torch.float32)],
                  "MHACross: nn.MultiheadAttention(64, 4, kdim=32, vdim=32, "
                  "batch_first=True)"),
    "gpt": ("gpt", GPT, tokens(32, 256),
            "GPT(vocab=256, ctx=32, d=48, n_head=3, n_layer=2): nanoGPT-"
            "style, tied wte/lm_head"),
    "mlp": ("mlp", mlp, [("input", [16, 16], torch.float32)],
            "nn.Sequential(Flatten, Linear(256,128), ReLU, Dropout(0.2), "
            "Linear(128,64), ReLU, Linear(64,10))"),
    "vit": ("vit", small_vit, img(32), TV + "VisionTransformer(image_size=32,"
            " patch_size=4, num_layers=2, num_heads=2, hidden_dim=48, "
            "mlp_dim=96, num_classes=10)"),
    "swin_small": ("swin", small_swin, img(32), TV + "SwinTransformer("
                   "patch_size=[4,4], embed_dim=16, depths=[2,2], num_heads="
                   "[2,4], window_size=[4,4], stochastic_depth_prob=0, "
                   "num_classes=10)"),
    "swin_t": ("swin", no_stochastic_depth(tvm.swin_t), img(224),
               TV + "swin_t(), StochasticDepth p set to 0"),
    # --full
    "resnet50_full": ("resnet", tvm.resnet50, img(224), TV + "resnet50()"),
    "mobilenet_v2_full": ("mobilenet_v2", tvm.mobilenet_v2, img(224),
                          TV + "mobilenet_v2()"),
    "encoder_6l": ("transformer_encoder",
                   lambda: EncoderClassifier(512, 8, 2048, 6), seq(256, 512),
                   "EncoderClassifier(512, 8, 2048, 6): nn.TransformerEncoder"
                   "(TransformerEncoderLayer(512, 8, 2048, batch_first=True), "
                   "6) + mean + Linear(512, 10)"),
    "gpt_124m": ("gpt", lambda: GPT(50257, 1024, 768, 12, 12),
                 tokens(1024, 50257), "GPT(vocab=50257, ctx=1024, d=768, "
                 "n_head=12, n_layer=12): GPT-2 small's shape"),
    "gpt_1p3b": ("gpt", lambda: GPT(50257, 512, 2048, 16, 24),
                 tokens(512, 50257), "GPT(vocab=50257, ctx=512, d=2048, "
                 "n_head=16, n_layer=24)"),
}


def E(model, mode="train", weights="inline", batch=4, dynamic=False,
      opset=17, **kw):
    """One export: training mode, weights inline, static batch 4, opset 17
    unless told otherwise."""
    family, make, inputs, source = MODELS[model]
    return dict(family=family, make=make, inputs=inputs, source=source,
                mode=mode, weights=weights, batch=batch, dynamic=dynamic,
                opset=opset, **kw)


SPREAD = {
    # torchvision CNNs
    "resnet_narrow_train_inline_b4": E("resnet_narrow"),
    "resnet_narrow_eval_inline_dyn": E("resnet_narrow", "eval", batch=2,
                                       dynamic=True),
    "resnet_narrow_train_inline_b2_opset11": E("resnet_narrow", batch=2,
                                               opset=11),
    "resnet_1111_train_graph_inputs_b4": E("resnet_1111",
                                           weights="graph_inputs"),
    "resnet_1111_eval_graph_inputs_dyn": E("resnet_1111", "eval", batch=2,
                                           weights="graph_inputs",
                                           dynamic=True),
    "resnet50_eval_external_missing_b2": E(
        "resnet50", "eval", "external", batch=2, data_elsewhere=True,
        notes="the .data file (90 MiB) is not committed: it is written to "
              "--data-elsewhere, so the external references dangle, as when "
              "a user copies only the .onnx"),
    "mobilenet_v2_w025_train_inline_b4": E("mobilenet_v2"),
    "mobilenet_v2_w025_eval_inline_dyn_opset13": E(
        "mobilenet_v2", "eval", batch=2, dynamic=True, opset=13),
    "shufflenet_v2_conv512_train_inline_b4": E("shufflenet_512"),
    "shufflenet_v2_x0_5_eval_graph_inputs_dyn": E(
        "shufflenet_x0_5", "eval", "graph_inputs", batch=2, dynamic=True),
    "squeezenet1_1_train_graph_inputs_dyn_opset12": E(
        "squeezenet", weights="graph_inputs", batch=2, dynamic=True, opset=12,
        notes="no BatchNorm; Dropout before the classifier conv"),
    "densenet_small_train_inline_b4": E("densenet"),
    "densenet_small_eval_inline_b2_opset11": E(
        "densenet", "eval", batch=2, opset=11,
        notes="pre-activation BN (BN -> ReLU -> Conv, BN after Concat) "
              "cannot fold into a Conv: eval BatchNormalization nodes keep "
              "weight/bias and running stats as initializers"),
    "googlenet_train_graph_inputs_b2": E(
        "googlenet", weights="graph_inputs", batch=2,
        notes="inception branches concatenated, max pooling"),
    # nn.TransformerEncoder (the case), nn.Transformer(Decoder)
    "transformer_encoder_train_inline_b4": E("encoder"),
    "transformer_encoder_eval_inline_dyn": E(
        "encoder", "eval", batch=2, dynamic=True,
        notes="constant folding stores in_proj_weight, linear1.weight and "
              "linear2.weight pre-transposed as onnx::MatMul_N initializers"),
    "transformer_encoder_eval_fresh_inline_b4": E(
        "encoder", "eval", fresh_init=True,
        notes="fresh init, not perturbed: nn.TransformerEncoder deep-copies "
              "its layer, so both layers start equal, and the eval exporter "
              "deduplicates equal initializers (one copy of each weight; "
              "LayerNorm weights and zero biases merged too)"),
    "transformer_encoder_train_external_dyn": E(
        "encoder", weights="external", batch=2, dynamic=True),
    "transformer_encoder_train_inline_b4_opset13": E(
        "encoder", opset=13,
        notes="LayerNorm exported as ReduceMean/Sub/Pow/... before opset 17"),
    "transformer_encoder_train_graph_inputs_b2_opset12": E(
        "encoder", weights="graph_inputs", batch=2, opset=12),
    "transformer_seq2seq_train_inline_b2": E("seq2seq", batch=2),
    "transformer_decoder_eval_inline_dyn_opset13": E(
        "decoder", "eval", batch=2, dynamic=True, opset=13),
    # nn.MultiheadAttention used directly
    "mha_self_train_inline_b4": E("mha_self"),
    "mha_cross_kdim_eval_inline_dyn_opset13": E(
        "mha_cross", "eval", batch=2, dynamic=True, opset=13,
        outputs=["output", "attn_weights"],
        notes="kdim/vdim != embed_dim: separate q/k/v_proj_weight; "
              "averaged attention weights are a second output"),
    # GPT-style decoder
    "gpt_train_inline_b4": E("gpt"),
    "gpt_eval_inline_b2": E(
        "gpt", "eval", batch=2,
        notes="constant folding renames: Linear weights are stored "
              "pre-transposed as onnx::MatMul_N, the wpe Gather over a "
              "constant arange is folded into onnx::Add_N [32,48], the mask "
              "buffers into a bool onnx::Where_N; the tied wte.weight stays "
              "for the Gather while the LM head reads a transposed copy "
              "onnx::MatMul_N [48,256], so the graph holds it twice"),
    "gpt_train_external_dyn": E("gpt", weights="external", batch=2,
                                dynamic=True),
    "gpt_train_inline_b4_opset13": E("gpt", opset=13),
    "gpt_train_graph_inputs_b4": E("gpt", weights="graph_inputs"),
    "gpt_train_graph_inputs_dyn": E(
        "gpt", weights="graph_inputs", batch=2, dynamic=True,
        notes="the causal-mask buffers h.N.attn.bias [1,1,32,32] (float) are "
              "graph inputs too, read through Slice -> Equal -> Where"),
    # MLP
    "mlp_train_inline_b4": E("mlp"),
    "mlp_eval_inline_dyn_opset11": E("mlp", "eval", batch=2, dynamic=True,
                                     opset=11),
    "mlp_train_external_b4_opset13": E("mlp", weights="external", opset=13),
    # ViT / Swin
    "vit_small_train_inline_b4": E(
        "vit", notes="Conv patch embedding, class_token expanded to the "
                     "batch, pos_embedding added, nn.MultiheadAttention"),
    "vit_small_eval_inline_dyn_opset13": E("vit", "eval", batch=2,
                                           dynamic=True, opset=13),
    "swin_small_train_inline_b2": E("swin_small", batch=2, notes=NOSD),
    "swin_t_train_graph_inputs_b8": E(
        "swin_t", weights="graph_inputs", batch=8,
        notes=NOSD + "; relative_position_bias_table [169,h] is a graph "
              "input read through Gather by the int64 buffer "
              "relative_position_index (also a graph input)"),
}

NO_GRAD = "traced under torch.no_grad() (memory; same graph)"
FULL = {
    "resnet50_eval_inline_dyn": E("resnet50_full", "eval", batch=2,
                                  dynamic=True),
    "mobilenet_v2_eval_inline_b8": E("mobilenet_v2_full", "eval", batch=8),
    "swin_t_train_inline_b8": E("swin_t", batch=8, notes=NOSD),
    "swin_t_train_graph_inputs_b8": SPREAD["swin_t_train_graph_inputs_b8"],
    "transformer_encoder_6l_d512_train_inline_b4": E("encoder_6l"),
    "gpt_124m_eval_inline_b4": E(
        "gpt_124m", "eval", no_grad=True,
        notes="torch.onnx.export's defaults (eval mode, constant folding): "
              "every Linear weight arrives pre-transposed as an "
              "onnx::MatMul_N initializer read by its MatMul directly, and "
              "the LM head reads an untied transposed copy of wte; "
              + NO_GRAD),
    "gpt_1p3b_train_graph_inputs_dyn": E(
        "gpt_1p3b", weights="graph_inputs", batch=1, dynamic=True,
        no_grad=True, fresh_init=True, notes=NO_GRAD),
    "gpt_1p3b_train_graph_inputs_b4": E(
        "gpt_1p3b", weights="graph_inputs", no_grad=True, fresh_init=True,
        notes=NO_GRAD),
}


# ----------------------------------------------------------------------------
# Export and describe
# ----------------------------------------------------------------------------

def perturb(model):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-3)
        for name, b in model.named_buffers():
            if b.is_floating_point() and not name.endswith("attn.bias"):
                b.add_(torch.rand_like(b) * 1e-3)


def example(spec, batch):
    out = []
    for _, shape, dt in spec["inputs"]:
        shp = [batch] + shape
        if isinstance(dt, tuple):
            out.append(torch.randint(0, dt[1], shp, dtype=dt[0]))
        else:
            out.append(torch.randn(shp, dtype=dt))
    return tuple(out)


def numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def vi_desc(v):
    t = v.type.tensor_type
    return {"name": v.name, "dtype": DTYPES.get(t.elem_type, str(t.elem_type)),
            "shape": [d.dim_param or d.dim_value for d in t.shape.dim]}


def export_one(name, spec, out_dir, data_dir):
    """Export one entry into out_dir; return its manifest entry."""
    mode, weights, batch = spec["mode"], spec["weights"], spec["batch"]
    dynamic, opset = spec["dynamic"], spec["opset"]
    torch.manual_seed(0)
    model = spec["make"]()
    if not spec.get("fresh_init"):
        perturb(model)
    model.train(mode == "train")
    args = example(spec, batch)
    in_names = [i[0] for i in spec["inputs"]]
    out_names = spec.get("outputs", ["output"])
    kw = {}
    if mode == "train":
        kw = dict(training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False)
    if dynamic:
        kw["dynamic_axes"] = {n: {0: "batch"} for n in in_names + out_names}
    path = os.path.join(out_dir, name + ".onnx")
    with torch.no_grad() if spec.get("no_grad") else torch.enable_grad():
        torch.onnx.export(model, args, path, export_params=weights != "graph_inputs",
                          opset_version=opset, input_names=in_names,
                          output_names=out_names, **kw)
    data = None
    if weights == "external":
        data = name + ".data"
        m = onnx.load(path)
        onnx.save_model(m, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location=data)
        if spec.get("data_elsewhere"):
            os.makedirs(data_dir, exist_ok=True)
            shutil.move(os.path.join(out_dir, data), os.path.join(data_dir, data))
    return describe(name, spec, model, path, data, in_names)


def describe(name, spec, model, path, data, in_names):
    mode = spec["mode"]
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    sd = model.state_dict(keep_vars=True)
    params = {n for n, v in sd.items() if isinstance(v, nn.Parameter)}
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    fbuf = sum(b.numel() for b in model.buffers() if b.is_floating_point())
    nbt = sum(b.numel() for n, b in model.named_buffers()
              if n.endswith("num_batches_tracked"))
    ibuf = sum(b.numel() for b in model.buffers()
               if not b.is_floating_point()) - nbt
    origin = {"parameter": 0, "buffer": 0, "generated": 0}
    generated = {}  # exporter-made names by prefix: onnx::MatMul_N -> onnx::MatMul
    for t in g.initializer:
        if t.data_type in FLOAT_TYPES:
            k = ("parameter" if t.name in params else
                 "buffer" if t.name in sd else "generated")
            origin[k] += numel(t.dims)
        if t.name not in sd:
            p = t.name.rstrip("0123456789").rstrip("_")
            generated[p] = generated.get(p, 0) + 1
    weight_inputs = [v for v in g.input if v.name not in in_names
                     and v.name not in inits]
    gi_float = sum(numel(d.dim_value for d in v.type.tensor_type.shape.dim)
                   for v in weight_inputs
                   if v.type.tensor_type.elem_type in FLOAT_TYPES)
    # What the graph should hold of PyTorch's trainable parameters: all of
    # them in training mode; in eval mode BatchNorm folded into the Conv
    # before it drops the BN's weight and bias (2C) and, for a Conv without
    # bias, adds a folded bias (C).  A module whose weight name no longer
    # appears in the graph was folded.
    names = set(inits) | {v.name for v in g.input}
    expected, folded = trainable, 0
    if mode == "eval":
        for mn, mod in model.named_modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm) and \
                    mn + ".weight" not in names:
                expected -= 2 * mod.num_features
                folded += 1
            if isinstance(mod, nn.Conv2d) and mn + ".weight" not in names \
                    and mod.bias is None:
                expected += mod.out_channels
    notes = [spec["notes"]] if spec.get("notes") else []
    if folded:
        notes.append(f"eval export folded {folded} BatchNorm(s) into the "
                     f"Conv before them (new initializers onnx::Conv_N): the "
                     f"graph holds {expected} trainable elements against "
                     f"PyTorch's {trainable}")
    if spec["weights"] == "external":
        notes.append("external data: onnx.save_model(save_as_external_data"
                     "=True, all_tensors_to_one_file=True) after the export; "
                     "tensors under 1024 bytes stay inline")
    data_inputs = [v for v in g.input if v.name in in_names]
    return {
        "file": name + ".onnx", "family": spec["family"],
        "source": spec["source"], "mode": mode, "weights": spec["weights"],
        "external_data": data,
        "external_data_committed": (None if data is None
                                    else not spec.get("data_elsewhere", False)),
        "batch": spec["batch"], "dynamic_batch": spec["dynamic"],
        "opset": spec["opset"], "fresh_init": spec.get("fresh_init", False),
        "inputs": [vi_desc(v) for v in data_inputs],
        "outputs": [vi_desc(v) for v in g.output],
        "pytorch_trainable_parameters": trainable,
        "pytorch_buffers": fbuf,
        "pytorch_num_batches_tracked": nbt,
        "pytorch_int_buffers_other": ibuf,
        "graph_trainable_expected": expected,
        "graph_initializer_float_numel": sum(origin.values()),
        "graph_initializer_float_numel_by_origin": origin,
        "graph_input_weight_float_numel": gi_float,
        "graph_generated_initializers": generated,
        "graph_nodes": len(g.node),
        "notes": "; ".join(notes),
    }


def check_file(path):
    m = onnx.load(path, load_external_data=False)
    ext = [t for t in m.graph.initializer
           if t.data_location == onnx.TensorProto.EXTERNAL]
    missing = [t.name for t in ext if not os.path.exists(os.path.join(
        os.path.dirname(path), dict((e.key, e.value) for e in
                                    t.external_data)["location"]))]
    if missing:  # dangling on purpose: check the graph without the bytes
        for t in ext:
            del t.external_data[:]
            t.data_location = onnx.TensorProto.DEFAULT
            t.raw_data = bytes(numel(t.dims) * 4)
    else:
        m = onnx.load(path)
    onnx.checker.check_model(m)
    return "ok" + (f" ({len(ext)} tensors in an absent .data)" if missing else "")


def run(registry, names, out_dir, data_dir):
    manifest, failed = {}, []
    for n in names:
        try:
            manifest[n] = export_one(n, registry[n], out_dir, data_dir)
            e = manifest[n]
            size = sum(os.path.getsize(os.path.join(out_dir, f))
                       for f in (e["file"], e["external_data"])
                       if f and os.path.exists(os.path.join(out_dir, f)))
            print(f"{n:46s} {size / 1024:9.1f} KiB  trainable "
                  f"{e['pytorch_trainable_parameters']:>11,d}  graph "
                  f"{e['graph_initializer_float_numel']:>10,d}", flush=True)
        except Exception as ex:  # keep going, report at the end
            failed.append(n)
            print(f"{n:46s} FAILED {type(ex).__name__}: {ex}", flush=True)
    return manifest, failed


def write_manifest(manifest, path):
    with open(path, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help=f"output directory (default {DEFAULT_OUT}, "
                                  f"with --full {FULL_OUT})")
    ap.add_argument("--data-elsewhere", default=os.path.join(FULL_OUT, "data"),
                    help="where .data files that are not committed go")
    ap.add_argument("--only", help="comma-separated entry names")
    ap.add_argument("--full", action="store_true",
                    help="full-size models for benchmarks (not committed)")
    ap.add_argument("--check", action="store_true",
                    help="re-export into a temporary directory, compare with "
                         "the files in --out, run onnx.checker on each")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    if not a.verbose:
        warnings.filterwarnings("ignore", category=UserWarning)
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    registry = FULL if a.full else SPREAD
    out_dir = a.out or (FULL_OUT if a.full else DEFAULT_OUT)
    names = [n for n in (a.only.split(",") if a.only else registry) if n]
    bad = [n for n in names if n not in registry]
    if bad:
        ap.error(f"unknown entries {bad}")
    os.makedirs(out_dir, exist_ok=True)
    man_path = os.path.join(out_dir, "manifest.json")
    old = {}
    if os.path.exists(man_path):
        with open(man_path) as f:
            old = json.load(f)
    if not a.check:
        manifest, failed = run(registry, names, out_dir, a.data_elsewhere)
        old.update(manifest)
        write_manifest(old, man_path)
        return 1 if failed else 0

    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        manifest, failed = run(registry, names, tmp, os.path.join(tmp, "x"))
        bad += len(failed)
        for n in names:
            if n not in manifest:
                continue
            e = manifest[n]
            for f in (e["file"], e["external_data"]):
                if f is None or not e["external_data_committed"] and f == e["external_data"]:
                    continue
                same = os.path.exists(os.path.join(out_dir, f)) and filecmp.cmp(
                    os.path.join(tmp, f), os.path.join(out_dir, f), shallow=False)
                if not same:
                    bad += 1
                print(f"{f:52s} {'identical' if same else 'DIFFERS'}")
            if old.get(n) != e:
                bad += 1
                print(f"{n}: manifest entry DIFFERS")
    for n in names:
        f = os.path.join(out_dir, n + ".onnx")
        try:
            status = check_file(f)
        except Exception as ex:
            status, bad = f"FAIL {type(ex).__name__}: {ex}", bad + 1
        print(f"checker {n + '.onnx':52s} {status}")
    print("check:", "FAILED" if bad else "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
