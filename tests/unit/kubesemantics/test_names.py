import random

from kubesemantics import names


def test_random_suffixes_use_the_vowel_free_alphabet() -> None:
    suffixes = {names.random_suffix(random.Random(seed)) for seed in range(50)}
    assert len(suffixes) == 50 and all(
        len(s) == 5 and set(s) <= set("bcdfghjklmnpqrstvwxz2456789") for s in suffixes
    )


def test_a_generated_name_keeps_at_most_58_characters_of_its_prefix() -> None:
    rng = random.Random(1)
    short = names.generated_name("rc-workers-worker-", rng)
    assert short.startswith("rc-workers-worker-") and len(short) == len("rc-workers-worker-") + 5
    long = names.generated_name("a" * 70, rng)  # a vowel: never in a suffix
    assert long[:58] == "a" * 58 and len(long) == 63 and "a" not in long[58:]
