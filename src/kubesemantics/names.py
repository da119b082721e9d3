"""Generated names, as kube-apiserver makes them from `metadata.generateName`.

The API server appends five characters of an alphabet without vowels (so no word is spelled by chance)
and without characters easily mistaken for one another, trimming the prefix so that the whole fits a
DNS-1123 label of 63 characters. Controllers use the same suffixes for names of their own (a RayJob's
cluster, a multi-host replica), and the operator names its pods this way before sending them, so that a
create whose answer was lost can still be recognised by name.
"""

from __future__ import annotations

import random

SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63
# The longest prefix kept of a generateName: what leaves room for the suffix.
MAX_GENERATE_NAME_PREFIX = MAX_GENERATED_NAME_LENGTH - SUFFIX_LENGTH


def random_suffix(rng: random.Random) -> str:
    """Kubernetes' `rand.String(5)`."""
    return "".join(rng.choice(SUFFIX_ALPHABET) for _ in range(SUFFIX_LENGTH))


def generated_name(prefix: str, rng: random.Random) -> str:
    """The name the API server gives an object created with `generateName: prefix` and no name."""
    return prefix[:MAX_GENERATE_NAME_PREFIX] + random_suffix(rng)
