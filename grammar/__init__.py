"""The HLO text grammar (hlo.lark), shipped as package data."""
