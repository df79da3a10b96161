"""Encoders: a backbone producing features h and a projection head producing z."""

from infonce_lab.models.resnet import Encoder, build_encoder

__all__ = ["Encoder", "build_encoder"]
