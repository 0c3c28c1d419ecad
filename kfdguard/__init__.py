"""kfdguard: makes AMD GPUs ready for compute (KFD) and keeps them ready."""

__version__ = "0.1.1"
