#!/usr/bin/env -S /usr/bin/python3
"""Structural variants of the models users train, for the planner benchmark.

    scripts/bench/variants.py --list                   one line per variant: name, cases
    scripts/bench/variants.py --describe               the same with what each variant is
    scripts/bench/variants.py --out DIR [--only RE]    export the variants (skip existing files)

Our own models are not the field: the planner's speed and exactness must hold on models
written differently from ours. Each family has a base configuration, and each variant changes
one thing users change (how attention is written, the mask, tying, normalisation, biases, the
activation, the size, the export's settings), plus a few combinations seen in the wild. The
families: GPT-style decoders, LLaMA-style decoders (RMSNorm, rotary embeddings, SwiGLU,
grouped-query attention by expand and reshape), BERT-style encoders (post-LN, token types,
pooler), a T5-style encoder-decoder (relative position bias, cross-attention), ViT,
nn.TransformerEncoder and torchvision CNNs.

Exports are plain torch.onnx.export calls, as users write them:
  train  training=TrainingMode.TRAINING, do_constant_folding=False, dynamic batch, weights
         inline under 300M parameters, as typed graph inputs (export_params=False) above;
  eval   the exporter's defaults: eval mode, constant folding, weights inline, the example's
         batch baked in (static). Fresh-init variants keep the constructor's weights, so the
         exporter merges equal tensors (LayerNorm weights, zero biases) across layers.

Each variant lists its benchmark cases GPUS/BATCH[/EPSILON]: 8 GPUs at 1 per GPU and at 64,
64 GPUs at 64, and for the large decoders 1,024 to 16,384 GPUs at 8 per GPU with epsilon 0.01.
Run with Debian's interpreter (python3-torch, python3-torchvision, python3-onnx).
"""

import argparse
import math
import os
import re
import sys
import warnings

EXACT = ["8/8", "8/64", "64/64"]
HUGE = ["1024/8192/0.01", "4096/32768/0.01", "16384/131072/0.01"]

# name: (family, config, mode, cases); config keys are the builders' keyword arguments.
GPT = dict(vocab=50257, ctx=1024, d=1024, heads=16, layers=24, dropout=0.1, qkv="fused",
           head="tied", mask="buffer", ln="pre", bias=True, gelu="erf")
LLAMA = dict(vocab=32000, ctx=1024, d=768, heads=12, kv_heads=4, layers=12, ffn=2048,
             tied=False)
BERT = dict(vocab=30522, ctx=512, d=768, heads=12, layers=12, ffn=3072, types=2)
T5 = dict(vocab=32128, ctx=512, d=768, heads=12, layers=12, ffn=3072)


def v(base, **kw):
    c = dict(base)
    c.update(kw)
    return c


VARIANTS = {
    # GPT-style, 350M base: one change at a time
    "gpt350m": ("gpt", v(GPT), "train", EXACT),
    "gpt350m_nodrop": ("gpt", v(GPT, dropout=0.0), "train", EXACT),
    "gpt350m_sepqkv": ("gpt", v(GPT, qkv="separate"), "train", EXACT),
    "gpt350m_untied": ("gpt", v(GPT, head="untied"), "train", EXACT),
    "gpt350m_tiedT": ("gpt", v(GPT, head="matmul_t"), "train", EXACT),
    "gpt350m_trilmask": ("gpt", v(GPT, mask="computed"), "train", EXACT),
    "gpt350m_postln": ("gpt", v(GPT, ln="post"), "train", EXACT),
    "gpt350m_nobias": ("gpt", v(GPT, bias=False), "train", EXACT),
    "gpt350m_tanh": ("gpt", v(GPT, gelu="tanh"), "train", EXACT),
    "gpt350m_opset13": ("gpt", v(GPT, opset=13), "train", EXACT),
    # the same base and some of its changes as default exports (eval, folded, inline, static)
    "gpt350m_eval": ("gpt", v(GPT), "eval", EXACT),
    "gpt350m_untied_eval": ("gpt", v(GPT, head="untied"), "eval", EXACT),
    "gpt350m_trilmask_eval": ("gpt", v(GPT, mask="computed"), "eval", EXACT),
    "gpt350m_postln_eval": ("gpt", v(GPT, ln="post"), "eval", EXACT),
    # sizes, and the held-out 1.3B of issue 25 (no dropout, fused QKV split in three, mask
    # from tril(ones), head through wte.weight.t())
    "gpt124m_eval": ("gpt", v(GPT, d=768, heads=12, layers=12), "eval", EXACT),
    "gpt124m_eval_fresh": ("gpt", v(GPT, d=768, heads=12, layers=12, fresh=True), "eval",
                           EXACT),
    "gpt760m_sepqkv_untied": ("gpt", v(GPT, d=1536, heads=16, qkv="separate", head="untied",
                                       dropout=0.0), "train", EXACT),
    "gpt1p3b_heldout": ("gpt", v(GPT, ctx=512, d=2048, heads=16, dropout=0.0, mask="computed",
                                 head="matmul_t"), "train", EXACT + HUGE),
    "gpt1p5b_25heads": ("gpt", v(GPT, d=1600, heads=25, layers=48, gelu="tanh"), "train",
                        EXACT + HUGE),
    # LLaMA-style
    "llama160m": ("llama", v(LLAMA), "train", EXACT),
    "llama160m_mha": ("llama", v(LLAMA, kv_heads=12), "train", EXACT),
    "llama160m_eval": ("llama", v(LLAMA), "eval", EXACT),
    "llama160m_mha_eval": ("llama", v(LLAMA, kv_heads=12), "eval", EXACT),
    "llama1p1b": ("llama", v(LLAMA, ctx=1024, d=2048, heads=32, kv_heads=4, layers=22,
                             ffn=5632), "train", EXACT + HUGE),
    # BERT-style
    "bert110m": ("bert", v(BERT), "train", EXACT),
    "bert110m_eval": ("bert", v(BERT), "eval", EXACT),
    "bert340m": ("bert", v(BERT, d=1024, heads=16, layers=24, ffn=4096), "train", EXACT),
    "bert340m_eval": ("bert", v(BERT, d=1024, heads=16, layers=24, ffn=4096), "eval", EXACT),
    # T5-style
    "t5_220m": ("t5", v(T5), "train", EXACT),
    "t5_220m_eval": ("t5", v(T5), "eval", EXACT),
    # ViT and nn.TransformerEncoder
    "vit_b16": ("vit", dict(layers=12, heads=12, d=768, mlp=3072), "train", EXACT),
    "vit_l16": ("vit", dict(layers=24, heads=16, d=1024, mlp=4096), "train", EXACT),
    "vit_b16_eval": ("vit", dict(layers=12, heads=12, d=768, mlp=3072), "eval", EXACT),
    "vit_l16_eval": ("vit", dict(layers=24, heads=16, d=1024, mlp=4096), "eval", EXACT),
    "encoder6l_train": ("encoder", dict(d=512, heads=8, ffn=2048, layers=6), "train",
                        EXACT),
    "encoder6l_eval_fresh": ("encoder", dict(d=512, heads=8, ffn=2048, layers=6, fresh=True),
                             "eval", EXACT),
    # torchvision CNNs
    "resnet101": ("cnn", dict(arch="resnet101"), "train", EXACT),
    "resnet101_eval": ("cnn", dict(arch="resnet101"), "eval", EXACT),
    # stochastic depth off: the exporter cannot export its Bernoulli in training mode
    "efficientnet_b0": ("cnn", dict(arch="efficientnet_b0", stochastic_depth_prob=0.0), "train",
                        EXACT),
    "efficientnet_b0_eval": ("cnn", dict(arch="efficientnet_b0"), "eval", EXACT),
    "convnext_tiny": ("cnn", dict(arch="convnext_tiny", stochastic_depth_prob=0.0), "train",
                      EXACT),
    "convnext_tiny_eval": ("cnn", dict(arch="convnext_tiny"), "eval", EXACT),
    "mobilenet_v3_small_eval": ("cnn", dict(arch="mobilenet_v3_small"), "eval", EXACT),
    "mobilenet_v3_small_eval_fresh": ("cnn", dict(arch="mobilenet_v3_small", fresh=True),
                                      "eval", EXACT),
    "densenet121_eval": ("cnn", dict(arch="densenet121"), "eval", EXACT),
    # written differently again: shifted-window attention (rolls, window partitions by reshape),
    # Inception branches, channel shuffle, grouped convolutions with squeeze-excitation
    "swin_t": ("cnn", dict(arch="SwinTransformer", patch_size=[4, 4], embed_dim=96, depths=[2, 2, 6, 2],
                           num_heads=[3, 6, 12, 24], window_size=[7, 7], stochastic_depth_prob=0.0),
               "train", EXACT),
    "swin_t_eval": ("cnn", dict(arch="swin_t"), "eval", EXACT),
    "googlenet_eval": ("cnn", dict(arch="googlenet", init_weights=True), "eval", EXACT),
    "shufflenet_v2_eval": ("cnn", dict(arch="shufflenet_v2_x1_0"), "eval", EXACT),
    "regnet_y_400mf_eval": ("cnn", dict(arch="regnet_y_400mf"), "eval", EXACT),
}


# ----------------------------------------------------------------------------------------------
# Builders (imported lazily: --list needs no torch)
# ----------------------------------------------------------------------------------------------

def builders():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def gelu(kind):
        return nn.GELU(approximate="tanh") if kind == "tanh" else nn.GELU()

    class Attention(nn.Module):
        def __init__(self, c):
            super().__init__()
            d, self.h, self.c = c["d"], c["heads"], c
            if c["qkv"] == "fused":
                self.qkv = nn.Linear(d, 3 * d, bias=c["bias"])
            else:
                self.q = nn.Linear(d, d, bias=c["bias"])
                self.k = nn.Linear(d, d, bias=c["bias"])
                self.v = nn.Linear(d, d, bias=c["bias"])
            self.proj = nn.Linear(d, d, bias=c["bias"])
            self.drop = nn.Dropout(c["dropout"])
            if c["mask"] == "buffer":
                self.register_buffer("mask", torch.tril(torch.ones(c["ctx"], c["ctx"]))
                                     .view(1, 1, c["ctx"], c["ctx"]))

        def forward(self, x):
            B, T, C = x.shape
            if self.c["qkv"] == "fused":
                q, k, v = self.qkv(x).split(C, dim=2)
            else:
                q, k, v = self.q(x), self.k(x), self.v(x)
            hd = C // self.h
            q, k, v = (t.view(B, T, self.h, hd).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
            if self.c["mask"] == "buffer":
                att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            else:
                causal = torch.tril(torch.ones(T, T, device=x.device, dtype=torch.bool))
                att = att.masked_fill(~causal, float("-inf"))
            att = self.drop(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.drop(self.proj(y))

    class GPTBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            d, self.pre = c["d"], c["ln"] == "pre"
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = Attention(c)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d, bias=c["bias"]), gelu(c["gelu"]),
                                     nn.Linear(4 * d, d, bias=c["bias"]),
                                     nn.Dropout(c["dropout"]))

        def forward(self, x):
            if self.pre:
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))

    class GPT(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
            self.wte, self.wpe = nn.Embedding(c["vocab"], c["d"]), nn.Embedding(c["ctx"], c["d"])
            self.drop = nn.Dropout(c["dropout"])
            self.blocks = nn.ModuleList(GPTBlock(c) for _ in range(c["layers"]))
            self.ln_f = nn.LayerNorm(c["d"])
            if c["head"] != "matmul_t":
                self.head = nn.Linear(c["d"], c["vocab"], bias=False)
                if c["head"] == "tied":
                    self.head.weight = self.wte.weight

        def forward(self, idx):
            T = idx.shape[1]
            pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for b in self.blocks:
                x = b(x)
            x = self.ln_f(x)
            if self.c["head"] == "matmul_t":
                return x @ self.wte.weight.t()
            return self.head(x)

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class LlamaAttention(nn.Module):
        def __init__(self, c):
            super().__init__()
            d, self.h, self.kvh = c["d"], c["heads"], c["kv_heads"]
            self.hd = d // self.h
            self.q = nn.Linear(d, d, bias=False)
            self.k = nn.Linear(d, self.kvh * self.hd, bias=False)
            self.v = nn.Linear(d, self.kvh * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
            f = torch.outer(torch.arange(c["ctx"]).float(), inv)
            emb = torch.cat((f, f), dim=-1)
            self.register_buffer("cos", emb.cos(), persistent=False)
            self.register_buffer("sin", emb.sin(), persistent=False)
            self.register_buffer("mask", torch.full((c["ctx"], c["ctx"]), float("-inf"))
                                 .triu(1), persistent=False)

        def forward(self, x):
            B, T, _ = x.shape
            q = self.q(x).view(B, T, self.h, self.hd).transpose(1, 2)
            k = self.k(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
            v = self.v(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
            cos, sin = self.cos[:T], self.sin[:T]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            rep = self.h // self.kvh
            if rep > 1:
                k = k[:, :, None].expand(B, self.kvh, rep, T, self.hd).reshape(B, self.h, T, self.hd)
                v = v[:, :, None].expand(B, self.kvh, rep, T, self.hd).reshape(B, self.h, T, self.hd)
            att = q @ k.transpose(2, 3) / math.sqrt(self.hd) + self.mask[:T, :T]
            y = F.softmax(att.float(), dim=-1).type_as(q) @ v
            return self.o(y.transpose(1, 2).reshape(B, T, -1))

    class LlamaBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            d = c["d"]
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
            self.attn = LlamaAttention(c)
            self.gate = nn.Linear(d, c["ffn"], bias=False)
            self.up = nn.Linear(d, c["ffn"], bias=False)
            self.down = nn.Linear(c["ffn"], d, bias=False)

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Llama(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.embed = nn.Embedding(c["vocab"], c["d"])
            self.blocks = nn.ModuleList(LlamaBlock(c) for _ in range(c["layers"]))
            self.norm = RMSNorm(c["d"])
            self.lm_head = nn.Linear(c["d"], c["vocab"], bias=False)

        def forward(self, idx):
            x = self.embed(idx)
            for b in self.blocks:
                x = b(x)
            return self.lm_head(self.norm(x))

    class BertLayer(nn.Module):
        def __init__(self, c):
            super().__init__()
            d = c["d"]
            self.attn = nn.MultiheadAttention(d, c["heads"], dropout=0.1, batch_first=True)
            self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
            self.ff = nn.Sequential(nn.Linear(d, c["ffn"]), nn.GELU(), nn.Linear(c["ffn"], d))
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            a, _ = self.attn(x, x, x, need_weights=False)
            x = self.ln1(x + self.drop(a))
            return self.ln2(x + self.drop(self.ff(x)))

    class Bert(nn.Module):
        def __init__(self, c):
            super().__init__()
            d = c["d"]
            self.word, self.pos = nn.Embedding(c["vocab"], d), nn.Embedding(c["ctx"], d)
            self.token_type = nn.Embedding(c["types"], d)
            self.ln, self.drop = nn.LayerNorm(d, eps=1e-12), nn.Dropout(0.1)
            self.layers = nn.ModuleList(BertLayer(c) for _ in range(c["layers"]))
            self.pool = nn.Linear(d, d)
            self.cls = nn.Linear(d, 2)

        def forward(self, ids, types):
            pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
            x = self.drop(self.ln(self.word(ids) + self.pos(pos) + self.token_type(types)))
            for layer in self.layers:
                x = layer(x)
            return self.cls(torch.tanh(self.pool(x[:, 0])))

    class T5Attention(nn.Module):
        def __init__(self, c, causal=False):
            super().__init__()
            d, self.h = c["d"], c["heads"]
            self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.v, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.causal = causal

        def forward(self, x, kv, bias):
            B, T, C = x.shape
            S, hd = kv.shape[1], C // self.h
            q = self.q(x).view(B, T, self.h, hd).transpose(1, 2)
            k = self.k(kv).view(B, S, self.h, hd).transpose(1, 2)
            v = self.v(kv).view(B, S, self.h, hd).transpose(1, 2)
            att = q @ k.transpose(-1, -2)
            if bias is not None:
                att = att + bias
            y = F.softmax(att, dim=-1) @ v
            return self.o(y.transpose(1, 2).reshape(B, T, C))

    def t5_buckets(n, causal, buckets=32, max_distance=128):
        ctx = torch.arange(n)[:, None]
        rel = torch.arange(n)[None, :] - ctx
        out = torch.zeros_like(rel)
        if causal:
            rel = -torch.clamp(rel, max=0)
        else:
            buckets //= 2
            out += (rel > 0).long() * buckets
            rel = rel.abs()
        exact = buckets // 2
        large = exact + (torch.log(rel.float().clamp(min=1) / exact)
                         / math.log(max_distance / exact) * (buckets - exact)).long()
        large = torch.clamp(large, max=buckets - 1)
        return out + torch.where(rel < exact, rel, large)

    class T5(nn.Module):
        def __init__(self, c):
            super().__init__()
            d, L = c["d"], c["layers"]
            self.embed = nn.Embedding(c["vocab"], d)
            self.enc_bias, self.dec_bias = nn.Embedding(32, c["heads"]), nn.Embedding(32, c["heads"])
            self.register_buffer("enc_b", t5_buckets(c["ctx"], False), persistent=False)
            causal = torch.full((c["ctx"], c["ctx"]), float("-inf")).triu(1)
            self.register_buffer("dec_b", t5_buckets(c["ctx"], True), persistent=False)
            self.register_buffer("causal", causal, persistent=False)
            ff = lambda: nn.Sequential(nn.Linear(d, c["ffn"], bias=False), nn.ReLU(),
                                       nn.Dropout(0.1), nn.Linear(c["ffn"], d, bias=False))
            self.enc = nn.ModuleList(nn.ModuleList([RMSNorm(d), T5Attention(c), RMSNorm(d), ff()])
                                     for _ in range(L))
            self.dec = nn.ModuleList(nn.ModuleList([RMSNorm(d), T5Attention(c, True), RMSNorm(d),
                                                    T5Attention(c), RMSNorm(d), ff()])
                                     for _ in range(L))
            self.enc_norm, self.dec_norm = RMSNorm(d), RMSNorm(d)
            self.lm_head = nn.Linear(d, c["vocab"], bias=False)
            self.drop = nn.Dropout(0.1)

        def forward(self, src, tgt):
            S, T = src.shape[1], tgt.shape[1]
            eb = self.enc_bias(self.enc_b[:S, :S]).permute(2, 0, 1).unsqueeze(0)
            db = self.dec_bias(self.dec_b[:T, :T]).permute(2, 0, 1).unsqueeze(0) \
                + self.causal[:T, :T]
            x = self.drop(self.embed(src))
            for n1, att, n2, ff in self.enc:
                h = n1(x)
                x = x + self.drop(att(h, h, eb))
                x = x + self.drop(ff(n2(x)))
            mem = self.enc_norm(x)
            y = self.drop(self.embed(tgt))
            for n1, sa, n2, ca, n3, ff in self.dec:
                h = n1(y)
                y = y + self.drop(sa(h, h, db))
                y = y + self.drop(ca(n2(y), mem, None))
                y = y + self.drop(ff(n3(y)))
            return self.lm_head(self.dec_norm(y) * (mem.shape[-1] ** -0.5))

    class EncoderClassifier(nn.Module):
        def __init__(self, c):
            super().__init__()
            layer = nn.TransformerEncoderLayer(c["d"], c["heads"], c["ffn"], batch_first=True)
            self.enc = nn.TransformerEncoder(layer, c["layers"])
            self.fc = nn.Linear(c["d"], 10)

        def forward(self, x):
            return self.fc(self.enc(x).mean(dim=1))

    def vit(c):
        from torchvision.models.vision_transformer import VisionTransformer
        return VisionTransformer(224, 16, c["layers"], c["heads"], c["d"], c["mlp"])

    def cnn(c):
        import torchvision.models as tvm
        return getattr(tvm, c["arch"])(**{k: x for k, x in c.items() if k not in ("arch", "fresh")})

    long_ = torch.long
    return {
        "gpt": (lambda c: GPT(c), lambda c: [("input", [c["ctx"]], (long_, c["vocab"]))]),
        "llama": (lambda c: Llama(c), lambda c: [("input", [c["ctx"]], (long_, c["vocab"]))]),
        "bert": (lambda c: Bert(c), lambda c: [("input_ids", [c["ctx"]], (long_, c["vocab"])),
                                              ("token_type_ids", [c["ctx"]], (long_, 2))]),
        "t5": (lambda c: T5(c), lambda c: [("src", [c["ctx"]], (long_, c["vocab"])),
                                          ("tgt", [c["ctx"] // 4], (long_, c["vocab"]))]),
        "encoder": (lambda c: EncoderClassifier(c),
                    lambda c: [("input", [256, c["d"]], torch.float32)]),
        "vit": (vit, lambda c: [("input", [3, 224, 224], torch.float32)]),
        "cnn": (cnn, lambda c: [("input", [3, 224, 224], torch.float32)]),
    }


def export(name, out_dir):
    import torch
    family, c, mode, _ = VARIANTS[name]
    make, inputs = builders()[family]
    torch.manual_seed(0)
    model = make(c)
    if not c.get("fresh"):
        with torch.no_grad():  # a trained model's weights: no two tensors equal
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 1e-3)
    params = sum(p.numel() for p in model.parameters())
    specs = inputs(c)
    batch = 2 if mode == "train" else 4
    args = []
    for _, shape, dt in specs:
        if isinstance(dt, tuple):
            args.append(torch.randint(0, dt[1], [batch] + shape, dtype=dt[0]))
        else:
            args.append(torch.randn([batch] + shape, dtype=dt))
    names = [s[0] for s in specs]
    kw = dict(opset_version=c.get("opset", 17), input_names=names, output_names=["output"])
    if mode == "train":
        model.train()
        kw.update(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                  export_params=params < 300e6,
                  dynamic_axes={n: {0: "batch"} for n in names + ["output"]})
    else:
        model.eval()
    path = os.path.join(out_dir, name + ".onnx")
    tmp = path + ".part"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a training export under no_grad saves memory and gives the same graph; an eval one
        # is traced with autograd on, as users call it (nn.TransformerEncoder's inference fast
        # path, which the exporter cannot export, is taken only under no_grad)
        with torch.no_grad() if mode == "train" else torch.enable_grad():
            torch.onnx.export(model, tuple(args), tmp, **kw)
    os.replace(tmp, path)
    return params


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--describe", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    names = [n for n in VARIANTS if re.search(a.only, n)]
    if a.list or a.describe:
        for n in names:
            family, c, mode, cases = VARIANTS[n]
            line = f"{n} {' '.join(cases)}"
            if a.describe:
                line += f"  # {family} {mode} {c}"
            print(line)
        return 0
    if not a.out:
        ap.error("--out DIR, --list or --describe")
    os.makedirs(a.out, exist_ok=True)
    failed = []
    for n in names:
        path = os.path.join(a.out, n + ".onnx")
        if os.path.exists(path):
            continue
        print(f"variants: exporting {n}", file=sys.stderr, flush=True)
        try:
            params = export(n, a.out)
        except Exception as e:  # one variant the exporter refuses does not stop the others
            print(f"variants: {n}: export failed: {type(e).__name__}: {str(e)[:300]}",
                  file=sys.stderr, flush=True)
            failed.append(n)
            continue
        print(f"variants: {n}: {params / 1e6:.0f}M parameters", file=sys.stderr, flush=True)
    if failed:
        print(f"variants: {len(failed)} failed: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
