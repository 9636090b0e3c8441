#!/usr/bin/env -S /usr/bin/python3
"""Export weightless ONNX models for tensoropt.

Run with the Debian interpreter (/usr/bin/python3: python3-torch 1.13,
python3-torchvision 0.14, python3-onnx 1.12):

    models/export.py [--out DIR] [--only name,name] [--extra]
    models/export.py [--extra] [--only ...] --reference-memory [--breakdown]

Every model is exported in training mode (BatchNormalization / Dropout kept as
training ops), opset 17, constant folding off, dynamic batch axis "batch" on
every input and output, and export_params=False, so parameters (and buffers
such as BatchNorm running stats) become typed graph inputs.  The trainable
parameter count, buffer count, data inputs and a forward MAC reference are
written to manifest.json next to the .onnx files (merged with an existing
manifest, keys sorted, so re-runs are stable).

--extra writes the robustness test models to tests/fixtures/models/ instead
(or to --out if given).  A registry entry may override the opset ("opset":
the *_opset12 models), and one tensoropt must refuse carries "expect_error"
(a string the error must name: lstm_tiny -> "LSTM") into its manifest entry.
An entry too big for a grad-enabled trace sets "no_grad_trace" (exported under
torch.no_grad(); same file) and "reference_memory": False (--reference-memory
skips it, so it has no saved_activation_bytes): gpt2_xl.

--reference-memory exports nothing: it adds saved_activation_bytes
({"1": bytes, "2": bytes}) and saved_activation_notes to the existing
manifest entries (everything else unchanged), measured with
torch.autograd.graph.saved_tensors_hooks over one forward pass at batch 1
and 2 (see SAVED_NOTE).  A normal export keeps those two fields.
"""

import argparse
import contextlib
import functools
import json
import math
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OPSET = 17


# ----------------------------------------------------------------------------
# Hand-written models
# ----------------------------------------------------------------------------

class BertBase(nn.Module):
    """BERT-base style encoder on nn.TransformerEncoder, classification head."""

    def __init__(self, vocab=30522, max_pos=512, d=768, nhead=12, ff=3072,
                 layers=12, dropout=0.1, num_classes=2):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(max_pos, d)
        self.emb_ln = nn.LayerNorm(d)
        self.emb_drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            d, nhead, dim_feedforward=ff, dropout=dropout, activation="gelu",
            batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.classifier = nn.Linear(d, num_classes)

    def forward(self, tokens):
        pos = torch.arange(tokens.size(1), device=tokens.device)
        x = self.tok_emb(tokens) + self.pos_emb(pos)
        x = self.emb_drop(self.emb_ln(x))
        x = self.encoder(x)
        return self.classifier(x[:, 0])


class GPT2Attention(nn.Module):
    def __init__(self, d, n_head, dropout):
        super().__init__()
        self.n_head = n_head
        self.d = d
        self.head_dim = d // n_head
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, _ = x.size()
        C, hd = self.d, self.head_dim
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.future(T, x.device), float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))

    def future(self, T, device):
        """[T, T] bool, true where a query would see a later key (masked out)."""
        return torch.ones(T, T, device=device).tril() == 0


class GPT2MLP(nn.Module):
    def __init__(self, d, dropout):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.gelu = nn.GELU()  # exact (erf) GELU
        self.c_proj = nn.Linear(4 * d, d)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, d, n_head, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = GPT2Attention(d, n_head, dropout)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = GPT2MLP(d, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2Small(nn.Module):
    def __init__(self, vocab=50257, ctx=1024, d=768, n_layer=12, n_head=12,
                 dropout=0.1):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(GPT2Block(d, n_head, dropout)
                               for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.n_layer, self.d, self.vocab = n_layer, d, vocab

    def forward(self, tokens):
        T = tokens.size(1)
        pos = torch.arange(T, device=tokens.device)
        x = self.drop(self.wte(tokens) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.t()  # tied LM head

    def extra_macs(self, T):
        # attention QK^T and AV: 2 * T*T*d per layer; tied LM head T*d*V
        return self.n_layer * 2 * T * T * self.d + T * self.d * self.vocab


class TinyMHADecoderLayer(nn.Module):
    def __init__(self, d, nhead, ff, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, nhead, dropout=dropout,
                                          batch_first=False)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):  # x: [T, B, d]
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + self.drop(a)
        x = x + self.drop(self.ff2(F.relu(self.ff1(self.ln2(x)))))
        return x


class TinyMHADecoder(nn.Module):
    """2-layer causal decoder, nn.MultiheadAttention(batch_first=False)."""

    def __init__(self, vocab=1000, ctx=64, d=128, nhead=4, layers=2, ff=512,
                 dropout=0.1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.layers = nn.ModuleList(TinyMHADecoderLayer(d, nhead, ff, dropout)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):  # [B, T] -> logits [B, T, V]
        T = tokens.size(1)
        x = self.emb(tokens) + self.pos(torch.arange(T, device=tokens.device))
        x = x.transpose(0, 1)  # [T, B, d]
        mask = torch.triu(torch.full((T, T), float("-inf"),
                                     device=tokens.device), diagonal=1)
        for layer in self.layers:
            x = layer(x, mask)
        return self.head(self.ln_f(x)).transpose(0, 1)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


# --- extra "models a new user might try" (verified in /tmp/trymodels) -------

class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
                * self.weight)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d, nh, ff):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        B, T, D = x.shape
        h = self.n1(x)
        q = self.q(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        v = self.v(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2, device=x.device)
                               .float() / self.hd))
        t = torch.arange(T, device=x.device).float()
        fr = torch.outer(t, inv)
        emb = torch.cat((fr, fr), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        mask = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        att = F.softmax(att + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.o(y)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TinyLlama(nn.Module):
    """3-layer LLaMA-style decoder: RMSNorm, rotary embeddings, SwiGLU,
    causal mask, untied LM head."""

    def __init__(self, vocab=1000, d=256, nh=4, ff=688, L=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaBlock(d, nh, ff) for _ in range(L))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.n_layer, self.d = L, d

    def forward(self, tokens):
        x = self.emb(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))

    def extra_macs(self, T):
        return self.n_layer * 2 * T * T * self.d  # QK^T + AV


class T5Block(nn.Module):
    def __init__(self, d, nh, ff):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.wi = nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, bias):
        B, T, D = x.shape
        q, k, v = (self.qkv(self.ln1(x)).view(B, T, 3, self.nh, self.hd)
                   .permute(2, 0, 3, 1, 4))
        att = F.softmax(q @ k.transpose(-1, -2) + bias, dim=-1)
        x = x + self.drop(self.o((self.drop(att) @ v).transpose(1, 2)
                                 .reshape(B, T, D)))
        return x + self.drop(self.wo(self.drop(F.relu(self.wi(self.ln2(x))))))


class TinyT5Encoder(nn.Module):
    """2-layer T5-style encoder: RMSNorm, relative position buckets
    (log-spaced, bidirectional) as an additive attention bias, no scaling."""

    def __init__(self, vocab=1000, d=256, nh=4, ff=1024, L=2, nb=32,
                 maxd=128):
        super().__init__()
        self.nb, self.maxd, self.nh = nb, maxd, nh
        self.emb = nn.Embedding(vocab, d)
        self.rel = nn.Embedding(nb, nh)
        self.blocks = nn.ModuleList(T5Block(d, nh, ff) for _ in range(L))
        self.norm = RMSNorm(d)
        self.n_layer, self.d = L, d

    def bucket(self, rp):
        nb = self.nb // 2
        ret = (rp > 0).to(torch.long) * nb
        n = torch.abs(rp)
        max_exact = nb // 2
        small = torch.lt(n, max_exact)
        large = max_exact + (torch.log(n.float() / max_exact)
                             / math.log(self.maxd / max_exact)
                             * (nb - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, nb - 1))
        return ret + torch.where(small, n, large)

    def forward(self, tokens):
        T = tokens.size(1)
        ctx = torch.arange(T, dtype=torch.long, device=tokens.device)[:, None]
        mem = torch.arange(T, dtype=torch.long, device=tokens.device)[None, :]
        b = self.rel(self.bucket(mem - ctx)).permute(2, 0, 1).unsqueeze(0)
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x, b)
        return self.norm(x)

    def extra_macs(self, T):
        return self.n_layer * 2 * T * T * self.d  # QK^T + AV


class EinsumBlock(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.wq = nn.Parameter(torch.randn(d, nh, d // nh) * 0.02)
        self.wk = nn.Parameter(torch.randn(d, nh, d // nh) * 0.02)
        self.wv = nn.Parameter(torch.randn(d, nh, d // nh) * 0.02)
        self.wo = nn.Parameter(torch.randn(nh, d // nh, d) * 0.02)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        T = x.shape[1]
        h = self.ln1(x)
        q = torch.einsum("btd,dhk->bhtk", h, self.wq)
        k = torch.einsum("btd,dhk->bhtk", h, self.wk)
        v = torch.einsum("btd,dhk->bhtk", h, self.wv)
        s = torch.einsum("bhqk,bhsk->bhqs", q, k) / math.sqrt(self.hd)
        mask = torch.ones(T, T, device=x.device).tril() == 0
        s = s.masked_fill(mask, -1e9)
        a = torch.einsum("bhqs,bhsk->bhqk", s.softmax(-1), v)
        x = x + torch.einsum("bhqk,hkd->bqd", a, self.wo)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class EinsumDecoder(nn.Module):
    """2-layer causal decoder whose attention is written with torch.einsum
    (projection weights as raw [d, heads, head_dim] Parameters)."""

    def __init__(self, vocab=1000, T=64, d=256, nh=4, L=2):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(EinsumBlock(d, nh) for _ in range(L))
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.emb(tokens) + self.pos(torch.arange(tokens.size(1),
                                                     device=tokens.device))
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class GPTGeluTanh(GPT2Small):
    """Tiny GPT2Small (3 layers, d=256, 4 heads, vocab 1000, ctx 64) with
    tanh-approximate GELU."""

    def __init__(self):
        super().__init__(vocab=1000, ctx=64, d=256, n_layer=3, n_head=4)
        for b in self.h:
            b.mlp.gelu = nn.GELU(approximate="tanh")


class ArangeMaskAttention(GPT2Attention):
    """GPT2Attention with the causal mask from an arange comparison instead
    of tril (aten::tril needs opset >= 14)."""

    def future(self, T, device):
        r = torch.arange(T, device=device)
        return r[None, :] > r[:, None]


class GPTErf(GPT2Small):
    """Tiny GPT2Small (3 layers, d=256, 4 heads, vocab 1000, ctx 64), exact
    (erf) GELU, causal mask from arange comparison (exportable at opset 12)."""

    def __init__(self):
        super().__init__(vocab=1000, ctx=64, d=256, n_layer=3, n_head=4)
        for b in self.h:
            b.attn = ArangeMaskAttention(256, 4, 0.1)


class TorchDecoder(nn.Module):
    """nn.TransformerDecoder (2 layers, d=256, 4 heads, ff 512, batch_first)
    over token embeddings with a separate encoder-memory input."""

    def __init__(self, vocab=1000, T=64, d=256, nh=4, L=2):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(T, d)
        layer = nn.TransformerDecoderLayer(d, nh, 512, 0.1, batch_first=True)
        self.dec = nn.TransformerDecoder(layer, L)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens, memory):
        T = tokens.size(1)
        x = self.emb(tokens) + self.pos(torch.arange(T, device=tokens.device))
        mask = torch.triu(torch.full((T, T), float("-inf"),
                                     device=tokens.device), 1)
        return self.head(self.dec(x, memory, tgt_mask=mask))


def _conv_gn_silu(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.GroupNorm(8, o),
                         nn.SiLU())


class TinyUNet(nn.Module):
    """3-level UNet: Conv+GroupNorm+SiLU, MaxPool, ConvTranspose2d and
    nearest interpolate upsampling, Concat skips."""

    def __init__(self):
        super().__init__()
        self.e1 = _conv_gn_silu(3, 32)
        self.e2 = _conv_gn_silu(32, 64)
        self.e3 = _conv_gn_silu(64, 128)
        self.pool = nn.MaxPool2d(2)
        self.up3 = nn.ConvTranspose2d(128, 64, 2, stride=2)
        self.d2 = _conv_gn_silu(128, 64)
        self.d1 = _conv_gn_silu(64 + 32, 32)
        self.out = nn.Conv2d(32, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(self.pool(a))
        c = self.e3(self.pool(b))
        d = self.d2(torch.cat([self.up3(c), b], 1))
        e = self.d1(torch.cat([F.interpolate(d, scale_factor=2,
                                             mode="nearest"), a], 1))
        return self.out(e)


class MiscNet(nn.Module):
    """InstanceNorm (affine and not), PReLU, Mish, Softplus, cumsum,
    F.normalize."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.in1 = nn.InstanceNorm2d(16, affine=True)
        self.act1 = nn.PReLU(16)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.in2 = nn.InstanceNorm2d(32, affine=False)
        self.sp, self.mish = nn.Softplus(), nn.Mish()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.act1(self.in1(self.c1(x)))
        x = self.mish(self.in2(self.c2(x)))
        x = self.sp(x)
        x = torch.cumsum(x, dim=3)
        x = x.mean((2, 3))
        x = F.normalize(x, dim=1)
        return self.fc(x)


class TinyLSTM(nn.Module):
    """Embedding -> 1-layer nn.LSTM(64, 128) -> Linear on the last step."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)
        self.lstm = nn.LSTM(64, 128, num_layers=1, batch_first=True)
        self.fc = nn.Linear(128, 10)

    def forward(self, tokens):
        y, _ = self.lstm(self.emb(tokens))
        return self.fc(y[:, -1])


class SegOut(nn.Module):
    """torchvision segmentation model returning only the "out" tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


# ----------------------------------------------------------------------------
# Model registry
# ----------------------------------------------------------------------------

def _tv(name, no_sd=False, **kw):
    import torchvision
    fn = getattr(torchvision.models, name)

    def make():
        model = fn(weights=None, **kw)
        if no_sd:  # see NO_SD
            for m in model.modules():
                if isinstance(m, torchvision.ops.StochasticDepth):
                    m.p = 0.0
        return model
    return make


def _seg(name, **kw):
    import torchvision
    fn = getattr(torchvision.models.segmentation, name)

    def make():
        return SegOut(fn(weights=None, weights_backbone=None, **kw))
    return make


IMAGE = [("image", ["batch", 3, 224, 224], torch.float32)]
TOK64 = [("tokens", ["batch", 64], torch.int64)]
IMAGE64 = [("image", ["batch", 3, 64, 64], torch.float32)]
MAC_NOTE = ("reference_macs_per_sample: multiply-accumulates of Conv2d and "
            "Linear modules (forward hooks) plus nn.MultiheadAttention "
            "(in/out projections + QK^T + AV); aten_macs_per_sample: "
            "independent count of aten convolution/mm/addmm/bmm/baddbmm "
            "MACs seen by a TorchDispatchMode")

# name -> dict(make, inputs, source, notes, [training], [params_inline], ...)
MAIN = {
    "resnet18": dict(make=_tv("resnet18"), inputs=IMAGE,
                     source="torchvision.models.resnet18"),
    "resnet50": dict(make=_tv("resnet50"), inputs=IMAGE,
                     source="torchvision.models.resnet50"),
    "vgg16": dict(make=_tv("vgg16"), inputs=IMAGE,
                  source="torchvision.models.vgg16"),
    "vit_b_16": dict(make=_tv("vit_b_16"), inputs=IMAGE,
                     source="torchvision.models.vit_b_16"),
    "bert_base": dict(
        make=BertBase, inputs=[("tokens", ["batch", 128], torch.int64)],
        source="models/export.py:BertBase (nn.TransformerEncoder, 12x768, "
               "12 heads, ff 3072, GELU, post-LN)",
        notes="classification head Linear(768,2) on token 0; position ids "
              "via torch.arange inside forward"),
    "gpt2_small": dict(
        make=GPT2Small, inputs=[("tokens", ["batch", 1024], torch.int64)],
        source="models/export.py:GPT2Small (plain torch GPT-2 124M)",
        notes="LM head tied to wte.weight; causal mask built in forward "
              "(ones(T,T).tril + masked_fill -inf); reference MACs add "
              "QK^T+AV (2*T*T*d per layer) and tied LM head (T*d*V)",
        expect_params=124439808),
    "gpt2_xl": dict(
        make=functools.partial(GPT2Small, d=1600, n_layer=48, n_head=25),
        inputs=[("tokens", ["batch", 1024], torch.int64)],
        source="models/export.py:GPT2Small with GPT-2 XL dimensions (48 "
               "layers, d=1600, 25 heads, ctx 1024, vocab 50257; 1.56B)",
        notes="LM head tied to wte.weight; causal mask built in forward "
              "(ones(T,T).tril + masked_fill -inf); reference MACs add "
              "QK^T+AV (2*T*T*d per layer) and tied LM head (T*d*V); traced "
              "under torch.no_grad() (no_grad_trace); no "
              "saved_activation_bytes (reference_memory=False: PyTorch keeps "
              "about 20 GB for backward at batch 1, T=1024)",
        expect_params=1557611200, no_grad_trace=True, reference_memory=False),
}

NO_SD = ("StochasticDepth p set to 0 (torch 1.13 cannot export the in-place "
         "bernoulli_ of torchvision StochasticDepth)")

EXTRA = {
    "mobilenet_v2": dict(make=_tv("mobilenet_v2"), inputs=IMAGE,
                         source="torchvision.models.mobilenet_v2"),
    "mobilenet_v3_small": dict(make=_tv("mobilenet_v3_small"), inputs=IMAGE,
                               source="torchvision.models.mobilenet_v3_small",
                               notes="HardSigmoid / HardSwish"),
    "densenet121": dict(make=_tv("densenet121"), inputs=IMAGE,
                        source="torchvision.models.densenet121",
                        notes="Concat-heavy"),
    "shufflenet_v2_x0_5": dict(make=_tv("shufflenet_v2_x0_5"), inputs=IMAGE,
                               source="torchvision.models.shufflenet_v2_x0_5",
                               notes="channel shuffle via Reshape/Transpose"),
    "squeezenet1_0": dict(make=_tv("squeezenet1_0"), inputs=IMAGE,
                          source="torchvision.models.squeezenet1_0"),
    "efficientnet_b0": dict(make=_tv("efficientnet_b0", no_sd=True), inputs=IMAGE,
                            source="torchvision.models.efficientnet_b0",
                            notes="SiLU, squeeze-excite; " + NO_SD),
    "regnet_y_400mf": dict(make=_tv("regnet_y_400mf"), inputs=IMAGE,
                           source="torchvision.models.regnet_y_400mf"),
    "convnext_tiny": dict(make=_tv("convnext_tiny", no_sd=True), inputs=IMAGE,
                          source="torchvision.models.convnext_tiny",
                          notes="LayerNorm over channels-last, Permute; " + NO_SD),
    "swin_t": dict(make=_tv("swin_t", no_sd=True), inputs=IMAGE,
                   source="torchvision.models.swin_t",
                   notes=NO_SD + "; windowed attention, roll, pad; qkv/proj use "
                         "F.linear so module hooks miss them "
                         "(reference_macs_per_sample is null)",
                   macs=False),
    "googlenet": dict(make=_tv("googlenet", aux_logits=False,
                                init_weights=False),
                      inputs=IMAGE, source="torchvision.models.googlenet"
                      "(aux_logits=False, init_weights=False)"),
    "resnet18_eval": dict(make=_tv("resnet18"), inputs=IMAGE,
                          source="torchvision.models.resnet18",
                          notes="exported with TrainingMode.EVAL",
                          training=False),
    "tiny_mha_decoder": dict(
        make=TinyMHADecoder, inputs=[("tokens", ["batch", 64], torch.int64)],
        source="models/export.py:TinyMHADecoder (2 layers, d=128, 4 heads, "
               "nn.MultiheadAttention batch_first=False, causal attn_mask "
               "from triu(full(-inf)))"),
    "mlp_inline": dict(make=MLP, inputs=[("x", ["batch", 256], torch.float32)],
                       source="models/export.py:MLP (256-128-64-10)",
                       notes="export_params=True: weights are inline "
                             "initializers", storage="inline"),
    "mlp_external": dict(make=MLP,
                         inputs=[("x", ["batch", 256], torch.float32)],
                         source="models/export.py:MLP (256-128-64-10)",
                         notes="weights as initializers in ONNX external data "
                               "(mlp_external.data; weights external, biases "
                               "below size_threshold=1024 stay inline); the .data file is "
                               "deleted on purpose",
                         storage="external"),
    # "models a new user might try"
    "llama_tiny": dict(
        make=TinyLlama, inputs=TOK64,
        source="models/export.py:TinyLlama (3 layers, d=256, 4 heads, SwiGLU "
               "ff 688, vocab 1000)",
        notes="RMSNorm (pow/mean/rsqrt), rotary embeddings computed in "
              "forward (arange/outer/cos/sin; torch.outer exports as Einsum; "
              "rotate_half via slice+cat), "
              "causal mask full(-inf).triu(1) added before softmax; reference "
              "MACs add QK^T+AV (2*T*T*d per layer)"),
    "t5_encoder_tiny": dict(
        make=TinyT5Encoder, inputs=TOK64,
        source="models/export.py:TinyT5Encoder (2 layers, d=256, 4 heads, "
               "ReLU ff 1024, vocab 1000)",
        notes="relative position buckets (32 buckets, max distance 128: "
              "abs/log/where/min on int64) -> Embedding(32, 4) attention "
              "bias shared by all layers; RMSNorm; reference MACs add "
              "QK^T+AV (2*T*T*d per layer)"),
    "t5_encoder_tiny_opset12": dict(
        make=TinyT5Encoder, inputs=TOK64, opset=12,
        source="models/export.py:TinyT5Encoder (2 layers, d=256, 4 heads, "
               "ReLU ff 1024, vocab 1000)",
        notes="t5_encoder_tiny exported at opset 12 (Split/ReduceMean/"
              "Unsqueeze take attributes, not inputs); reference MACs add "
              "QK^T+AV (2*T*T*d per layer)"),
    "einsum_decoder": dict(
        make=EinsumDecoder, inputs=TOK64,
        source="models/export.py:EinsumDecoder (2 layers, d=256, 4 heads, "
               "GELU ff 1024, vocab 1000)",
        notes="q/k/v/out projections and attention as torch.einsum (ONNX "
              "Einsum) with raw Parameter weights, so module hooks miss them "
              "(reference_macs_per_sample is null); causal mask "
              "ones.tril()==0 + masked_fill(-1e9)",
        macs=False),
    "gpt_gelu_tanh": dict(
        make=GPTGeluTanh, inputs=TOK64,
        source="models/export.py:GPTGeluTanh (GPT2Small with 3 layers, d=256, "
               "4 heads, vocab 1000, ctx 64)",
        notes="GELU(approximate='tanh') (ONNX Gelu is opset 20: exported as "
              "Tanh/Pow/Mul); LM head tied to wte.weight; reference MACs add "
              "QK^T+AV and the tied LM head"),
    "gpt_erf_opset12": dict(
        make=GPTErf, inputs=TOK64, opset=12,
        source="models/export.py:GPTErf (GPT2Small with 3 layers, d=256, "
               "4 heads, vocab 1000, ctx 64, exact erf GELU)",
        notes="exported at opset 12; causal mask from an arange comparison "
              "(r[None,:] > r[:,None]) + masked_fill(-inf), no tril (needs "
              "opset 14); LM head tied to wte.weight; reference MACs add "
              "QK^T+AV and the tied LM head"),
    "torch_transformer_decoder": dict(
        make=TorchDecoder,
        inputs=TOK64 + [("memory", ["batch", 16, 256], torch.float32)],
        source="models/export.py:TorchDecoder (nn.TransformerDecoder, 2 "
               "layers, d=256, 4 heads, ff 512, ReLU, post-LN, batch_first)",
        notes="two data inputs: tokens [batch, 64] and encoder memory "
              "[batch, 16, 256]; self-attention with triu(full(-inf)) "
              "tgt_mask, cross-attention over memory"),
    "unet_groupnorm": dict(
        make=TinyUNet, inputs=IMAGE64,
        source="models/export.py:TinyUNet (3 levels, 32/64/128 channels)",
        notes="GroupNorm(8) + SiLU, MaxPool2d, ConvTranspose2d(128, 64, 2, "
              "stride 2), F.interpolate(scale 2, nearest), Concat skips; "
              "reference MACs include ConvTranspose2d (input elements * "
              "out_channels/groups * kh*kw)"),
    "misc_instnorm_prelu": dict(
        make=MiscNet, inputs=IMAGE64,
        source="models/export.py:MiscNet",
        notes="InstanceNorm2d (affine and not), PReLU(16), Mish, Softplus, "
              "CumSum, mean over H,W, F.normalize"),
    "deeplabv3_mobilenet_v3_large": dict(
        make=_seg("deeplabv3_mobilenet_v3_large", aux_loss=False),
        inputs=IMAGE,
        source="torchvision.models.segmentation.deeplabv3_mobilenet_v3_large"
               "(weights=None, weights_backbone=None, aux_loss=False), "
               "output ['out']",
        notes="dilated convolutions, ASPP with global pooling branch "
              "upsampled by bilinear interpolate (Resize), final bilinear "
              "Resize to the input size; PyTorch cannot run it in training "
              "mode at batch 1 (BatchNorm after the ASPP global pooling), so "
              "saved_activation_bytes['1'] is extrapolated (see "
              "saved_activation_notes)",
        b1_extrapolated=True),
    "inception_v3": dict(
        make=_tv("inception_v3", aux_logits=False, init_weights=False),
        inputs=[("image", ["batch", 3, 299, 299], torch.float32)],
        source="torchvision.models.inception_v3(aux_logits=False, "
               "init_weights=False)",
        notes="299x299 input; asymmetric 1x7/7x1 convolutions"),
    "lstm_tiny": dict(
        make=TinyLSTM, inputs=[("tokens", ["batch", 32], torch.int64)],
        source="models/export.py:TinyLSTM (Embedding(1000, 64) -> "
               "nn.LSTM(64, 128) -> Linear(128, 10) on the last step)",
        notes="ONNX LSTM op: tensoropt must refuse it (expect_error); module "
              "hooks miss the LSTM (reference_macs_per_sample is null)",
        macs=False, expect_error="LSTM"),
}


# ----------------------------------------------------------------------------
# MAC reference
# ----------------------------------------------------------------------------

def count_macs(model, example, extra_fn=None):
    """Forward MACs per sample from module hooks (train mode, no_grad)."""
    total = [0]

    def conv_hook(m, inp, out):
        kh, kw = m.kernel_size
        total[0] += out.numel() * (m.in_channels // m.groups) * kh * kw

    def conv_transpose_hook(m, inp, out):
        # every input element is multiplied into a kh*kw patch of each of the
        # out_channels/groups outputs of its group
        kh, kw = m.kernel_size
        total[0] += inp[0].numel() * (m.out_channels // m.groups) * kh * kw

    def linear_hook(m, inp, out):
        x = inp[0]
        rows = x.numel() // m.in_features
        total[0] += rows * m.in_features * m.out_features

    def mha_hook(m, inp, out):
        if len(inp) >= 2:
            q, k = inp[0], inp[1]
        else:  # called with keywords (torchvision ViT): self-attention
            q = k = out[0]
        if m.batch_first:
            N, L, E = q.shape
            S = k.shape[1]
        else:
            L, N, E = q.shape
            S = k.shape[0]
        # q,k,v projections + QK^T + AV + out projection
        total[0] += N * (L * E * E + 2 * S * E * E + 2 * L * S * E + L * E * E)

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.ConvTranspose2d):
            hooks.append(m.register_forward_hook(conv_transpose_hook))
        elif isinstance(m, nn.MultiheadAttention):
            hooks.append(m.register_forward_hook(mha_hook))
        elif isinstance(m, nn.Linear):
            # MHA.out_proj is never *called* as a module, so no double count
            hooks.append(m.register_forward_hook(linear_hook))
    was_training = model.training
    model.train()  # avoids the fused fast path of nn.TransformerEncoder
    try:
        with torch.no_grad():
            model(*example)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    batch = example[0].shape[0]
    assert total[0] % batch == 0
    macs = total[0] // batch
    if extra_fn is not None:
        macs += extra_fn()
    return macs


def count_aten_macs(model, example):
    """Cross-check: MACs per sample of aten convolution/mm/addmm/bmm/baddbmm
    ops seen by a TorchDispatchMode (train mode, no_grad)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    aten = torch.ops.aten
    total = [0]

    def prod(xs):
        r = 1
        for x in xs:
            r *= int(x)
        return r

    class Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            pkt = getattr(func, "overloadpacket", None)
            if pkt is aten.convolution:
                # convolution(input, weight, bias, stride, padding, dilation,
                #             transposed, output_padding, groups)
                w = args[1]
                transposed = args[6] if len(args) > 6 else False
                if transposed:
                    # weight [C_in, C_out/groups, kh, kw]: each input element
                    # meets C_out/groups * kh*kw weights
                    total[0] += args[0].numel() * prod(w.shape[1:])
                else:
                    # weight [C_out, C_in/groups, kh, kw]
                    total[0] += out.numel() * prod(w.shape[1:])
            elif pkt in (aten.mm, aten.bmm):
                total[0] += out.numel() * args[0].shape[-1]
            elif pkt in (aten.addmm, aten.baddbmm):
                total[0] += out.numel() * args[1].shape[-1]
            return out

    was_training = model.training
    model.train()
    try:
        with torch.no_grad(), Counter():
            model(*example)
    finally:
        model.train(was_training)
    return total[0] // example[0].shape[0]


# ----------------------------------------------------------------------------
# Saved-activation reference (--reference-memory)
# ----------------------------------------------------------------------------

SAVED_NOTE = (
    "saved_activation_bytes: bytes of the distinct tensor storages the "
    "PyTorch 1.13 CPU autograd graph keeps for backward after one forward "
    "pass at batch 1 and 2 (model in the manifest's training mode, grad "
    "enabled, parameters requires_grad, input not requiring grad, no loss: "
    "graph rooted at the model output), captured with "
    "torch.autograd.graph.saved_tensors_hooks; only saved tensors still held "
    "by the live graph after the forward are counted; each storage counted "
    "once at its full storage nbytes (dedup by storage data_ptr, so a saved "
    "view keeps and counts its whole base storage); storages of parameters "
    "and buffers (and views of them, e.g. weight.t()) excluded; the model "
    "input is counted when saved; dropout masks (float32 on CPU: the "
    "non-fused input*mask path), BatchNorm save_mean/save_invstd and "
    "max-pool indices are included; seed 0 + perturb() as the export, "
    "torch.set_num_threads(2); the output tensor itself is not counted "
    "unless some node saved it")


B1_EXTRAPOLATED_NOTE = (
    "batch 1 is not measured: PyTorch refuses the training-mode forward at "
    "batch 1 (BatchNorm over a [1, C, 1, 1] pooled tensor: 'Expected more "
    "than 1 value per channel when training'); saved_activation_bytes['1'] "
    "= 2*bytes(batch 2) - bytes(batch 3), with bytes measured at batch 2, 3 "
    "and 4 and checked to be affine in the batch (equal increments)")


def measure_saved_activations(model, example, want_breakdown=False):
    """Bytes of distinct non-parameter storages saved for backward by one
    forward pass of model(*example) with grad enabled.

    Returns dict(bytes=..., n_saved=..., n_storages=..., big_views=[...],
    breakdown={grad_fn name: bytes} or None)."""
    import gc
    import weakref

    def storage_of(t):
        if hasattr(t, "untyped_storage"):
            return t.untyped_storage()
        return t.storage()

    class Packed:
        __slots__ = ("t", "idx", "__weakref__")

        def __init__(self, t, idx):
            self.t, self.idx = t, idx

    records = []      # (idx, weakref to Packed, ptr, storage nbytes, view bytes)
    unpacked = []     # idx of every unpack while walking the graph

    def pack(t):
        st = storage_of(t)
        p = Packed(t, len(records))
        records.append((p.idx, weakref.ref(p), st.data_ptr(), st.nbytes(),
                        t.numel() * t.element_size(), str(t.dtype),
                        (tuple(t.shape), tuple(t.stride()),
                         t.storage_offset())))
        return p

    def unpack(p):
        unpacked.append(p.idx)
        return p.t

    skip = set()
    for t in list(model.parameters()) + list(model.buffers()):
        skip.add(storage_of(t).data_ptr())
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = model(*example)
    gc.collect()
    alive = [r for r in records if r[1]() is not None]

    owner = {}
    if want_breakdown:
        # Map each pack event to the grad_fn that saved it by reading the
        # node's _saved_* attributes (which runs our unpack hook).
        roots = [out.grad_fn] if out.grad_fn is not None else []
        seen, stack, keep = set(), list(roots), []
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            keep.append(node)  # keep ids unique while walking
            for a in dir(node):
                if a.startswith("_saved_"):
                    del unpacked[:]
                    try:
                        getattr(node, a)
                    except Exception:
                        pass
                    for i in unpacked:
                        owner.setdefault(i, type(node).__name__)
            stack.extend(fn for fn, _ in node.next_functions)

    by_ptr = {}
    for idx, _, ptr, nbytes, vbytes, dtype, view in alive:
        if ptr in skip:
            continue
        e = by_ptr.setdefault(ptr, dict(nbytes=nbytes, first=idx, views=[]))
        e["first"] = min(e["first"], idx)
        e["views"].append((vbytes, dtype, view, owner.get(idx, "?")))
    total = sum(e["nbytes"] for e in by_ptr.values())
    big_views = []
    for e in by_ptr.values():
        # bytes addressed by the distinct saved views (upper bound of the
        # union; overlapping distinct views are rare here)
        distinct = {v[2]: v[0] for v in e["views"]}
        covered = min(e["nbytes"], sum(distinct.values()))
        if e["nbytes"] >= 2 * covered and e["nbytes"] > 0:
            big_views.append((e["nbytes"], covered, e["views"][0][2][0],
                              sorted({v[3] for v in e["views"]})))
    breakdown = None
    if want_breakdown:
        breakdown = {}
        for e in by_ptr.values():
            k = owner.get(e["first"], "<unreached>")
            c = breakdown.setdefault(k, [0, 0])
            c[0] += e["nbytes"]
            c[1] += 1
    res = dict(bytes=total, n_saved=len(alive), n_packed=len(records),
               n_storages=len(by_ptr), big_views=sorted(big_views,
                                                          reverse=True),
               breakdown=breakdown)
    del out, alive, records
    gc.collect()
    return res


def reference_memory(name, spec, batches=(1, 2), breakdown=False):
    """saved_activation_bytes for one registry entry; model built exactly as
    export_one builds it (seed 0, spec["make"], perturb, train(training))."""
    t0 = time.time()
    torch.manual_seed(0)
    model = spec["make"]()
    training = spec.get("training", True)
    perturb(model)
    model.train(training)
    for p in model.parameters():
        p.requires_grad_(True)
    if spec.get("b1_extrapolated"):
        # PyTorch cannot run the training-mode forward at batch 1 (see
        # B1_EXTRAPOLATED_NOTE): measure 2, 3, 4 and extrapolate to 1
        batches = (2, 3, 4)
    result, details = {}, {}
    for b in batches:
        torch.manual_seed(0)
        example = make_example(spec["inputs"], b)
        r = measure_saved_activations(model, example, breakdown)
        result[str(b)] = r["bytes"]
        details[b] = r
    if spec.get("b1_extrapolated"):
        b2, b3, b4 = result["2"], result["3"], result["4"]
        assert b3 - b2 == b4 - b3, (name, "saved bytes not affine in batch",
                                    b2, b3, b4)
        result = {"1": 2 * b2 - b3, "2": b2}
    dt = time.time() - t0
    print(f"{name:20s} saved b1={result.get('1', 0)/2**20:10.2f} MiB  "
          f"b2={result.get('2', 0)/2**20:10.2f} MiB  "
          f"({details[batches[0]]['n_storages']} storages, "
          f"{details[batches[0]]['n_saved']}/{details[batches[0]]['n_packed']}"
          f" saved alive)  {dt:6.1f}s", flush=True)
    return result, details


# ----------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------

DTYPE_NAMES = {torch.float32: "float32", torch.int64: "int64"}
ONNX_DTYPES = {onnx.TensorProto.FLOAT: "float32",
               onnx.TensorProto.INT64: "int64"}


def make_example(inputs, batch):
    out = []
    for _, shape, dtype in inputs:
        shp = [batch if s == "batch" else s for s in shape]
        if dtype == torch.int64:
            out.append(torch.randint(0, 100, shp, dtype=dtype))
        else:
            out.append(torch.randn(shp, dtype=dtype))
    return tuple(out)


def perturb(model):
    """Make all parameters/float buffers distinct so the exporter does not
    deduplicate identical tensors (e.g. LayerNorm weights = 1) into Identity
    nodes."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 1e-3)
        for name, b in model.named_buffers():
            if b.is_floating_point():
                if name.endswith("running_var"):
                    b.add_(torch.rand_like(b) * 1e-3)
                else:
                    b.add_(torch.randn_like(b) * 1e-3)


def export_one(name, spec, out_dir):
    t0 = time.time()
    torch.manual_seed(0)
    model = spec["make"]()
    training = spec.get("training", True)
    storage = spec.get("storage")  # None (weightless), "inline", "external"
    n_params = sum(p.numel() for p in model.parameters())
    if "expect_params" in spec:
        assert n_params == spec["expect_params"], (name, n_params)

    macs = None
    if spec.get("macs", True):
        extra = None
        if hasattr(model, "extra_macs"):  # GPT2Small, TinyLlama, ...
            T = spec["inputs"][0][1][1]
            extra = lambda: model.extra_macs(T)  # noqa: E731
        macs = count_macs(model, make_example(spec["inputs"], 2), extra)

    aten_macs = count_aten_macs(model, make_example(spec["inputs"], 2))

    perturb(model)
    model.train(training)
    example = make_example(spec["inputs"], 2)
    input_names = [i[0] for i in spec["inputs"]]
    output_names = ["logits"]
    dyn = {n: {0: "batch"} for n in input_names + output_names}
    path = os.path.join(out_dir, name + ".onnx")
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    opset = spec.get("opset", OPSET)
    # The tracer runs the forward with grad enabled, so the autograd graph of
    # the batch-2 example is built while exporting: about 40 GB for gpt2_xl.
    # Under torch.no_grad() the file is the same (checked byte for byte on
    # gpt2_small); only entries with no_grad_trace use it, so the other
    # exports stay untouched.
    no_grad = spec.get("no_grad_trace", False)
    with torch.no_grad() if no_grad else contextlib.nullcontext():
        torch.onnx.export(model, example, path, opset_version=opset,
                          training=mode, do_constant_folding=False,
                          export_params=storage is not None,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dyn)

    m = onnx.load(path)
    if storage == "external":
        data_name = name + ".data"
        onnx.save_model(m, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location=data_name,
                        size_threshold=1024)
        os.remove(os.path.join(out_dir, data_name))  # bytes absent on purpose
        m = onnx.load(path, load_external_data=False)

    # Check: every parameter reachable as a graph input (or initializer).
    graph_inputs = {i.name for i in m.graph.input}
    inits = {i.name for i in m.graph.initializer}
    params = dict(model.named_parameters())  # tied weights appear once
    have = graph_inputs if storage is None else inits
    missing = [p for p in params if p not in have]
    if training:
        assert not missing, (name, "parameters missing from graph:", missing)
    # In EVAL mode the exporter folds BatchNorm into the preceding Conv even
    # with do_constant_folding=False; the fused tensors become graph inputs
    # named onnx::Conv_NNN, so only a loose check is possible there.
    buffers = dict(model.named_buffers())
    buf_numel = sum(b.numel() for n, b in buffers.items() if n in have)
    data_inputs = [i for i in m.graph.input if i.name in input_names]
    assert [i.name for i in data_inputs] == input_names, name
    # numel of all weight-like tensors in the graph (non-data graph inputs
    # plus initializers)
    weight_numel = 0
    for v in m.graph.input:
        if v.name not in input_names and v.name not in inits:
            n_el = 1
            for d in v.type.tensor_type.shape.dim:
                n_el *= d.dim_value
            weight_numel += n_el
    for t in m.graph.initializer:
        n_el = 1
        for d in t.dims:
            n_el *= d
        weight_numel += n_el
    if training:
        assert weight_numel == n_params + buf_numel, (name, weight_numel)

    def vi_desc(v):
        t = v.type.tensor_type
        shape = [d.dim_param if d.dim_param else d.dim_value
                 for d in t.shape.dim]
        return {"name": v.name, "shape": shape,
                "dtype": ONNX_DTYPES.get(t.elem_type, str(t.elem_type))}

    notes = spec.get("notes", "")
    notes = (notes + "; " if notes else "") + MAC_NOTE
    entry = {
        "file": name + ".onnx",
        "trainable_parameters": n_params,
        "buffers": buf_numel,
        "inputs": [vi_desc(v) for v in data_inputs],
        "outputs": [vi_desc(v) for v in m.graph.output],
        "source": spec["source"],
        "notes": notes,
        "opset": opset,
        "training_mode": training,
        "parameter_storage": {None: "graph_inputs", "inline": "initializers",
                              "external": "external_data_missing"}[storage],
        "reference_macs_per_sample": macs,
        "graph_weight_numel": weight_numel,
        "aten_macs_per_sample": aten_macs,
    }
    if "expect_error" in spec:
        # tensoropt must refuse this model with an error naming this string
        entry["expect_error"] = spec["expect_error"]
    size = os.path.getsize(path)
    dt = time.time() - t0
    print(f"{name:20s} {size/1024:9.1f} KiB  params={n_params:>12,d}  "
          f"buffers={buf_numel:>9,d}  macs={macs if macs is None else f'{macs/1e9:.4f}G'}"
          f" aten={aten_macs/1e9:.4f}G"
          f"  {dt:6.1f}s", flush=True)
    return entry


def check_dir(out_dir, only=None):
    """onnx.checker every model in out_dir; print node-type counts."""
    import collections
    import onnx.numpy_helper  # noqa: F401
    names = sorted(f[:-5] for f in os.listdir(out_dir) if f.endswith(".onnx"))
    if only:
        names = [n for n in names if n in only.split(",")]
    bad = 0
    for n in names:
        path = os.path.join(out_dir, n + ".onnx")
        # load without external data: mlp_external's .data is absent on purpose
        m = onnx.load(path, load_external_data=False)
        ext = [t for t in m.graph.initializer
               if t.data_location == onnx.TensorProto.EXTERNAL]
        try:
            if ext:
                # the checker insists on the external file existing; check a
                # copy whose external tensors are zero-filled inline instead
                import numpy as np
                c = onnx.ModelProto()
                c.CopyFrom(m)
                for t in c.graph.initializer:
                    if t.data_location == onnx.TensorProto.EXTERNAL:
                        arr = np.zeros(list(t.dims), dtype=onnx.mapping.
                                       TENSOR_TYPE_TO_NP_TYPE[t.data_type])
                        t.CopyFrom(onnx.numpy_helper.from_array(arr, t.name))
                onnx.checker.check_model(c)
                status = (f"ok ({len(ext)} initializers in absent external "
                          f"data; checked zero-filled copy)")
            else:
                onnx.checker.check_model(m)
                status = "ok"
        except Exception as e:
            status = f"FAIL {type(e).__name__}: {e}"
            bad += 1
        ops = collections.Counter(nd.op_type for nd in m.graph.node)
        print(f"{n}: {status}; {len(m.graph.node)} nodes, "
              f"{len(m.graph.input)} inputs, "
              f"{len(m.graph.initializer)} initializers")
        print("    " + ", ".join(f"{k}={v}" for k, v in sorted(ops.items())))
    return 1 if bad else 0


SAVED_KEYS = ("saved_activation_bytes", "saved_activation_notes")


def write_manifest(manifest, man_path):
    with open(man_path, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


def update_reference_memory(manifest, man_path, registry, names, breakdown):
    failed = []
    t_all = time.time()
    for n in names:
        if n not in manifest:
            print(f"{n:20s} not in {man_path}; export it first", flush=True)
            failed.append(n)
            continue
        spec = registry[n]
        if not spec.get("reference_memory", True):
            # too big to measure here (gpt2_xl): no saved_activation_bytes
            print(f"{n:20s} skipped (reference_memory=False)", flush=True)
            continue
        try:
            result, details = reference_memory(n, spec, breakdown=breakdown)
        except Exception as e:  # keep going; report at the end
            failed.append(n)
            print(f"{n:20s} FAILED: {type(e).__name__}: {e}", flush=True)
            continue
        note = SAVED_NOTE
        if not spec.get("training", True):
            note += ("; measured in eval mode (as exported) with grad "
                     "enabled: BatchNorm saves input and running stats, no "
                     "batch statistics")
        if spec.get("b1_extrapolated"):
            note += "; " + B1_EXTRAPOLATED_NOTE
        first = min(details)
        big = details[first]["big_views"]
        if big:
            mb = sum(x[0] - x[1] for x in big)
            note += (f"; at batch {first}, {len(big)} saved storage(s) are only "
                     f"reached through views covering at most half of them "
                     f"(counted in full: {mb} bytes beyond the viewed "
                     f"elements)")
        manifest[n]["saved_activation_bytes"] = result
        manifest[n]["saved_activation_notes"] = note
        write_manifest(manifest, man_path)
        for b, r in sorted(details.items()):
            for nb, vb, shape, who in r["big_views"][:3]:
                by = "" if who == ["?"] else f", saved by {', '.join(who)}"
                print(f"    b{b}: view {list(shape)} ({vb} B) of a {nb} B "
                      f"storage{by}")
        if breakdown:
            top = sorted(details[min(details)]["breakdown"].items(),
                         key=lambda kv: -kv[1][0])[:10]
            for k, (nb, cnt) in top:
                print(f"    {k:32s} {nb/2**20:10.2f} MiB  {cnt:4d} storages")
    print(f"reference memory: {time.time() - t_all:.1f}s", flush=True)
    if failed:
        print("failed:", ", ".join(failed), file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--extra", action="store_true",
                    help="export the robustness test models "
                         "(default dir tests/fixtures/models)")
    ap.add_argument("--check", action="store_true",
                    help="do not export; run onnx.checker on every .onnx in "
                         "the output dir and print node-type counts")
    ap.add_argument("--reference-memory", action="store_true",
                    help="do not export; add saved_activation_bytes (batch 1 "
                         "and 2, measured with saved_tensors_hooks) to the "
                         "existing manifest entries in place")
    ap.add_argument("--breakdown", action="store_true",
                    help="with --reference-memory: print the 10 largest "
                         "saved-storage groups by grad_fn at batch 1")
    ap.add_argument("--verbose", action="store_true",
                    help="show exporter warnings")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    if not args.verbose:
        # the exporter warns once per BN about dropping the
        # num_batches_tracked update, and about training-mode export
        warnings.filterwarnings("ignore", category=UserWarning)
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)

    registry = EXTRA if args.extra else MAIN
    out_dir = args.out or (os.path.join(REPO, "tests", "fixtures", "models")
                           if args.extra else HERE)
    os.makedirs(out_dir, exist_ok=True)
    names = list(registry)
    if args.only:
        names = [n for n in args.only.split(",") if n]
        bad = [n for n in names if n not in registry]
        if bad:
            ap.error(f"unknown model(s) {bad}; choose from {list(registry)}")

    if args.check:
        return check_dir(out_dir, args.only)

    man_path = os.path.join(out_dir, "manifest.json")
    manifest = {}
    if os.path.exists(man_path):
        with open(man_path) as f:
            manifest = json.load(f)
    if args.reference_memory:
        return update_reference_memory(manifest, man_path, registry, names,
                                       args.breakdown)
    failed = []
    for n in names:
        try:
            entry = export_one(n, registry[n], out_dir)
            # keep fields only --reference-memory writes (they depend on the
            # model definition, not on the export)
            for k in SAVED_KEYS:
                if k in manifest.get(n, {}):
                    entry[k] = manifest[n][k]
            manifest[n] = entry
        except Exception as e:  # keep going; report at the end
            failed.append((n, f"{type(e).__name__}: {e}"))
            print(f"{n:20s} FAILED: {type(e).__name__}: {e}", flush=True)
        write_manifest(manifest, man_path)
    if failed:
        print("failed:", ", ".join(n for n, _ in failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
