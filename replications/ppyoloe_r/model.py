"""PP-YOLOE-R in PyTorch: CSPRepResNet backbone, CustomCSPPAN neck, rotated head with a decoupled DFL angle branch.

Matched, layer by layer, to PaddleDetection 2.6 (`backbones/cspresnet.py`, `necks/custom_pan.py`,
`heads/ppyoloe_r_head.py`) and the config `configs/rotate/ppyoloe_r/_base_/ppyoloe_r_crn.yml`; written from
reading them, not copied. Size multipliers (depth, width) come from `ppyoloe_r_crn_{s,m,l,x}_3x_dota.yml`.
`reparameterize(model)` turns every RepVGG block into one 3x3 conv (the deploy form the README's params/FLOPs
are measured in).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

SIZES = {"s": (0.33, 0.50), "m": (0.67, 0.75), "l": (1.0, 1.0), "x": (1.33, 1.25)}  # (depth, width)
BN_EPS = 1e-5  # paddle BatchNorm2D default epsilon


class ConvBN(nn.Module):
    def __init__(self, cin: int, cout: int, k: int = 3, stride: int = 1, act: bool = True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=BN_EPS)
        self.act = nn.SiLU() if act else nn.Identity()  # swish everywhere in PP-YOLOE-R

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


def fuse_conv_bn(block: ConvBN) -> tuple[torch.Tensor, torch.Tensor]:
    """Kernel and bias of one conv equal (in eval mode) to conv followed by BN."""
    bn = block.bn
    std = (bn.running_var + bn.eps).sqrt()
    t = bn.weight / std
    return block.conv.weight * t.reshape(-1, 1, 1, 1), bn.bias - bn.running_mean * t


class RepVGGBlock(nn.Module):
    """3x3 ConvBN + alpha * 1x1 ConvBN, then swish; `alpha` is the learnable gating unit (use_alpha=True)."""

    def __init__(self, cin: int, cout: int, alpha: bool = True):
        super().__init__()
        self.conv1 = ConvBN(cin, cout, 3, act=False)
        self.conv2 = ConvBN(cin, cout, 1, act=False)
        self.alpha = nn.Parameter(torch.ones(1)) if alpha else None
        self.act = nn.SiLU()
        self.deploy: nn.Conv2d | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.deploy is not None:
            return self.act(self.deploy(x))
        side = self.conv2(x)
        return self.act(self.conv1(x) + (self.alpha * side if self.alpha is not None else side))

    @torch.no_grad()
    def reparameterize(self) -> None:
        k3, b3 = fuse_conv_bn(self.conv1)
        k1, b1 = fuse_conv_bn(self.conv2)
        a = self.alpha if self.alpha is not None else 1.0
        conv = nn.Conv2d(self.conv1.conv.in_channels, self.conv1.conv.out_channels, 3, 1, 1, bias=True)
        conv = conv.to(k3.device, k3.dtype)
        conv.weight.copy_(k3 + a * F.pad(k1, [1, 1, 1, 1]))
        conv.bias.copy_(b3 + a * b1)
        self.deploy = conv
        # The official convert_to_deploy keeps alpha as a (now unused) parameter: 1 number per block, below
        # the README's 0.01 M rounding; we drop it with the branches.
        del self.conv1, self.conv2
        self.alpha = None


class BasicBlock(nn.Module):
    def __init__(self, ch: int, shortcut: bool, alpha: bool = True):
        super().__init__()
        self.conv1 = ConvBN(ch, ch, 3)
        self.conv2 = RepVGGBlock(ch, ch, alpha)
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.conv1(x))
        return x + y if self.shortcut else y


class EffectiveSE(nn.Module):
    def __init__(self, ch: int):
        super().__init__()
        self.fc = nn.Conv2d(ch, ch, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * F.hardsigmoid(self.fc(x.mean((2, 3), keepdim=True)))  # paddle hardsigmoid = x/6 + 0.5


class CSPResStage(nn.Module):
    def __init__(self, cin: int, cout: int, n: int, alpha: bool = True):
        super().__init__()
        mid = (cin + cout) // 2
        self.conv_down = ConvBN(cin, mid, 3, stride=2)
        self.conv1 = ConvBN(mid, mid // 2, 1)
        self.conv2 = ConvBN(mid, mid // 2, 1)
        self.blocks = nn.Sequential(*[BasicBlock(mid // 2, True, alpha) for _ in range(n)])
        self.attn = EffectiveSE(mid)
        self.conv3 = ConvBN(mid, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_down(x)
        return self.conv3(self.attn(torch.cat([self.conv1(x), self.blocks(self.conv2(x))], 1)))


def scaled(values: list[int] | int, mult: float) -> list[int] | int:
    """max(round(v * mult), 1): Python round (half to even), as the official code."""
    if isinstance(values, int):
        return max(round(values * mult), 1)
    return [max(round(v * mult), 1) for v in values]


class CSPResNet(nn.Module):
    """Large stem (use_large_stem: True), 4 stages; returns strides 8, 16, 32 (return_idx [1, 2, 3])."""

    def __init__(self, depth: float, width: float, alpha: bool = True):
        super().__init__()
        ch = scaled([64, 128, 256, 512, 1024], width)
        layers = scaled([3, 6, 6, 3], depth)
        self.stem = nn.Sequential(ConvBN(3, ch[0] // 2, 3, 2), ConvBN(ch[0] // 2, ch[0] // 2), ConvBN(ch[0] // 2, ch[0]))
        self.stages = nn.ModuleList([CSPResStage(ch[i], ch[i + 1], layers[i], alpha) for i in range(4)])
        self.out_channels = ch[2:]

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.stem(x)
        outs = []
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i >= 1:
                outs.append(x)
        return outs


class SPP(nn.Module):
    def __init__(self, cin: int, cout: int, pools: tuple[int, ...] = (5, 9, 13)):
        super().__init__()
        self.pools = pools
        self.conv = ConvBN(cin, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.cat([x] + [F.max_pool2d(x, k, 1, k // 2) for k in self.pools], 1))


class CSPStage(nn.Module):
    """Neck stage: two 1x1 branches, n BasicBlocks without shortcut (SPP after the middle one if asked)."""

    def __init__(self, cin: int, cout: int, n: int, spp: bool, alpha: bool = True):
        super().__init__()
        mid = cout // 2
        self.conv1 = ConvBN(cin, mid, 1)
        self.conv2 = ConvBN(cin, mid, 1)
        convs: list[nn.Module] = []
        for i in range(n):
            convs.append(BasicBlock(mid, False, alpha))
            if spp and i == (n - 1) // 2:
                convs.append(SPP(mid * 4, mid))
        self.convs = nn.Sequential(*convs)
        self.conv3 = ConvBN(mid * 2, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv3(torch.cat([self.conv1(x), self.convs(self.conv2(x))], 1))


class CustomCSPPAN(nn.Module):
    """Top-down FPN then bottom-up PAN; out_channels [768, 384, 192] x width, block_num 3 x depth, SPP on top."""

    def __init__(self, in_channels: list[int], depth: float, width: float, alpha: bool = True):
        super().__init__()
        out = scaled([768, 384, 192], width)
        n = scaled(3, depth)
        cins = in_channels[::-1]  # stride 32 first
        self.fpn_stages, self.fpn_routes = nn.ModuleList(), nn.ModuleList()
        prev = 0
        for i, (cin, cout) in enumerate(zip(cins, out)):
            cin = cin + (prev // 2 if i > 0 else 0)
            self.fpn_stages.append(CSPStage(cin, cout, n, spp=(i == 0), alpha=alpha))
            if i < 2:
                self.fpn_routes.append(ConvBN(cout, cout // 2, 1))
            prev = cout
        # pan_routes[i] / pan_stages[i] merge level i+1 (finer) into level i, for i = 1, 0
        self.pan_routes = nn.ModuleList([ConvBN(out[i + 1], out[i + 1], 3, 2) for i in range(2)])
        self.pan_stages = nn.ModuleList([CSPStage(out[i] + out[i + 1], out[i], n, spp=False, alpha=alpha)
                                         for i in range(2)])
        self.out_channels = out  # strides 32, 16, 8

    def forward(self, feats: list[torch.Tensor]) -> list[torch.Tensor]:
        fpn = []
        route = None
        for i, block in enumerate(feats[::-1]):
            if route is not None:
                block = torch.cat([route, block], 1)
            route = self.fpn_stages[i](block)
            fpn.append(route)
            if i < 2:
                route = F.interpolate(self.fpn_routes[i](route), scale_factor=2.0, mode="nearest")
        pan = [fpn[-1]]
        route = fpn[-1]
        for i in (1, 0):
            route = self.pan_stages[i](torch.cat([self.pan_routes[i](route), fpn[i]], 1))
            pan.append(route)
        return pan[::-1]


class ESEAttn(nn.Module):
    def __init__(self, ch: int):
        super().__init__()
        self.fc = nn.Conv2d(ch, ch, 1)
        self.conv = ConvBN(ch, ch, 1)
        nn.init.normal_(self.fc.weight, std=0.01)

    def forward(self, feat: torch.Tensor, avg: torch.Tensor) -> torch.Tensor:
        return self.conv(feat * torch.sigmoid(self.fc(avg)))


class RotatedHead(nn.Module):
    """Per level: classification, (x, y, w, h) regression and a decoupled angle branch.

    angle="dfl" (the paper): 91 logits over bins 0, pi/180, ..., pi/2, decoded as the softmax expectation.
    angle="direct" (the ablation's baseline): one channel, theta = sigmoid(z) * pi/2.
    """

    def __init__(self, in_channels: list[int], num_classes: int, strides: tuple[int, ...] = (32, 16, 8),
                 angle: str = "dfl", angle_max: int = 90):
        super().__init__()
        if angle not in ("dfl", "direct"):
            raise ValueError(f"angle must be 'dfl' or 'direct', got {angle!r}")
        self.num_classes, self.strides, self.angle, self.angle_max = num_classes, strides, angle, angle_max
        self.stem_cls = nn.ModuleList([ESEAttn(c) for c in in_channels])
        self.stem_reg = nn.ModuleList([ESEAttn(c) for c in in_channels])
        self.stem_angle = nn.ModuleList([ESEAttn(c) for c in in_channels])
        n_angle = angle_max + 1 if angle == "dfl" else 1
        self.pred_cls = nn.ModuleList([nn.Conv2d(c, num_classes, 3, padding=1) for c in in_channels])
        self.pred_reg = nn.ModuleList([nn.Conv2d(c, 4, 3, padding=1) for c in in_channels])
        self.pred_angle = nn.ModuleList([nn.Conv2d(c, n_angle, 3, padding=1) for c in in_channels])
        # fixed projection of the 91 bins onto angles (the official angle_proj_conv, stop_gradient): a buffer
        self.register_buffer("angle_proj", torch.linspace(0, math.pi / 2, angle_max + 1), persistent=False)
        prior = -math.log((1 - 0.01) / 0.01)  # bias_init_with_prob(0.01)
        for cls_, reg_, ang_ in zip(self.pred_cls, self.pred_reg, self.pred_angle):
            nn.init.normal_(cls_.weight, std=0.01)
            nn.init.constant_(cls_.bias, prior)
            nn.init.normal_(reg_.weight, std=0.01)
            nn.init.zeros_(reg_.bias)
            nn.init.zeros_(ang_.weight)
            if angle == "dfl":
                with torch.no_grad():
                    ang_.bias.copy_(torch.tensor([10.0] + [1.0] * angle_max))  # official bias_angle
            else:
                nn.init.zeros_(ang_.bias)

    def anchors(self, feats: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        points, strides = [], []
        for f, s in zip(feats, self.strides):
            h, w = f.shape[-2:]
            ys, xs = torch.meshgrid((torch.arange(h, device=f.device) + 0.5) * s,
                                    (torch.arange(w, device=f.device) + 0.5) * s, indexing="ij")
            points.append(torch.stack([xs, ys], -1).reshape(-1, 2))
            strides.append(torch.full((h * w, 1), float(s), device=f.device))
        return torch.cat(points).float(), torch.cat(strides)

    def forward(self, feats: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        """Raw outputs, [B, L, .] over all levels: cls logits, (x, y, w, h) offsets, angle logits."""
        cls, reg, ang = [], [], []
        for i, f in enumerate(feats):
            avg = f.mean((2, 3), keepdim=True)
            cls.append(self.pred_cls[i](self.stem_cls[i](f, avg) + f).flatten(2).transpose(1, 2))
            reg.append(self.pred_reg[i](self.stem_reg[i](f, avg)).flatten(2).transpose(1, 2))
            ang.append(self.pred_angle[i](self.stem_angle[i](f, avg)).flatten(2).transpose(1, 2))
        points, strides = self.anchors(feats)
        return {"cls_logits": torch.cat(cls, 1), "reg": torch.cat(reg, 1), "angle_logits": torch.cat(ang, 1),
                "points": points, "strides": strides}

    def decode_angle(self, angle_logits: torch.Tensor) -> torch.Tensor:
        if self.angle == "dfl":
            return torch.softmax(angle_logits, -1) @ self.angle_proj
        return torch.sigmoid(angle_logits[..., 0]) * (math.pi / 2)

    def decode(self, out: dict[str, torch.Tensor]) -> torch.Tensor:
        """[B, L, 5] boxes (x, y, w, h, theta) in input pixels: xy = offset * stride + point,
        wh = (elu + 1) * stride, theta from the angle branch (official _bbox_decode)."""
        reg, s = out["reg"], out["strides"]
        xy = reg[..., :2] * s + out["points"]
        wh = (F.elu(reg[..., 2:]) + 1.0) * s
        return torch.cat([xy, wh, self.decode_angle(out["angle_logits"]).unsqueeze(-1)], -1)


class PPYOLOER(nn.Module):
    def __init__(self, size: str = "s", num_classes: int = 15, angle: str = "dfl", alpha: bool = True):
        super().__init__()
        if size not in SIZES:
            raise ValueError(f"unknown PP-YOLOE-R size '{size}'; valid: {', '.join(SIZES)}")
        depth, width = SIZES[size]
        self.size = size
        self.backbone = CSPResNet(depth, width, alpha)
        self.neck = CustomCSPPAN(self.backbone.out_channels, depth, width, alpha)
        self.head = RotatedHead(self.neck.out_channels, num_classes, angle=angle)

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.head(self.neck(self.backbone(images)))


def reparameterize(model: nn.Module) -> nn.Module:
    """Every RepVGG block to its single-conv deploy form, in place (call in eval mode: BN statistics fuse)."""
    for m in list(model.modules()):
        if isinstance(m, RepVGGBlock) and m.deploy is None:
            m.reparameterize()
    return model


def trainable_parameters(model: nn.Module) -> int:
    """Parameters with gradients (BN running statistics and the fixed angle projection are buffers)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
