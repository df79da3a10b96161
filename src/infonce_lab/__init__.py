"""InfoNCE Lab: a reproducible pipeline for studying contrastive representation learning."""

import os as _os

# Every hub call gets a deadline. huggingface_hub reads these once, when it is first imported
# (by transformers or datasets, whichever comes first), so they are set on the package's import,
# before either; a value the user exported wins.
for _var, _seconds in (("HF_HUB_ETAG_TIMEOUT", "20"), ("HF_HUB_DOWNLOAD_TIMEOUT", "20")):
    _os.environ.setdefault(_var, _seconds)

__version__ = "0.1.0"
