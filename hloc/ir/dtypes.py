"""Element types: HLO spelling, NumPy storage type, bit width and kind.

One table; everything else (shapes, literals, the interpreter) looks types up here.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True, eq=False)   # singletons: identity equality and hash are exact
class DType:
    name: str            # HLO spelling: f32, bf16, s4, pred ...
    np: np.dtype | None  # NumPy storage type (None for token/opaque)
    bits: int            # logical width in bits
    kind: str            # pred | int | uint | float | complex | token | opaque

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def is_integral(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_array(self) -> bool:
        return self.kind not in ("token", "opaque")

    def __repr__(self) -> str:
        return self.name


def _t(name, np_type, bits, kind):
    return DType(name, None if np_type is None else np.dtype(np_type), bits, kind)


_TABLE = [
    _t("pred", np.bool_, 8, "pred"),
    _t("s1", np.int8, 1, "int"),
    _t("s2", ml_dtypes.int2, 2, "int"),
    _t("s4", ml_dtypes.int4, 4, "int"),
    _t("s8", np.int8, 8, "int"),
    _t("s16", np.int16, 16, "int"),
    _t("s32", np.int32, 32, "int"),
    _t("s64", np.int64, 64, "int"),
    _t("u1", np.uint8, 1, "uint"),
    _t("u2", ml_dtypes.uint2, 2, "uint"),
    _t("u4", ml_dtypes.uint4, 4, "uint"),
    _t("u8", np.uint8, 8, "uint"),
    _t("u16", np.uint16, 16, "uint"),
    _t("u32", np.uint32, 32, "uint"),
    _t("u64", np.uint64, 64, "uint"),
    _t("f16", np.float16, 16, "float"),
    _t("bf16", ml_dtypes.bfloat16, 16, "float"),
    _t("f32", np.float32, 32, "float"),
    _t("f64", np.float64, 64, "float"),
    _t("f8e5m2", ml_dtypes.float8_e5m2, 8, "float"),
    _t("f8e4m3", ml_dtypes.float8_e4m3, 8, "float"),
    _t("f8e4m3fn", ml_dtypes.float8_e4m3fn, 8, "float"),
    _t("f8e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz, 8, "float"),
    _t("f8e3m4", ml_dtypes.float8_e3m4, 8, "float"),
    _t("f8e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 8, "float"),
    _t("f8e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 8, "float"),
    _t("f4e2m1fn", ml_dtypes.float4_e2m1fn, 4, "float"),
    _t("f8e8m0fnu", ml_dtypes.float8_e8m0fnu, 8, "float"),
    _t("c64", np.complex64, 64, "complex"),
    _t("c128", np.complex128, 128, "complex"),
    _t("token", None, 0, "token"),
    _t("opaque", None, 0, "opaque"),
]

DTYPES: dict[str, DType] = {t.name: t for t in _TABLE}
DTYPES["opaque_type"] = DTYPES["opaque"]

PRED = DTYPES["pred"]
S32 = DTYPES["s32"]
U32 = DTYPES["u32"]
S64 = DTYPES["s64"]
F32 = DTYPES["f32"]
TOKEN = DTYPES["token"]

_BY_NP = {}
for _d in _TABLE:
    if _d.np is not None and _d.name not in ("s1", "u1"):
        _BY_NP.setdefault(_d.np, _d)


def from_numpy(dt) -> DType:
    """The HLO element type that stores NumPy dtype `dt`."""
    return _BY_NP[np.dtype(dt)]


def real_part_type(dt: DType) -> DType:
    """f32 for c64, f64 for c128, else the type itself."""
    return {"c64": DTYPES["f32"], "c128": DTYPES["f64"]}.get(dt.name, dt)


def complex_type_for(dt: DType) -> DType:
    return {"f32": DTYPES["c64"], "f64": DTYPES["c128"]}[dt.name]
