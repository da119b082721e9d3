"""README.md's known-differences table is known.py's, current (it needs no server)."""

from pathlib import Path

from differential.known import markdown

README = Path(__file__).with_name("README.md")


def test_readme_lists_every_known_difference() -> None:
    text = README.read_text()
    begin, end = "<!-- known: begin -->\n", "<!-- known: end -->"
    assert text[text.index(begin) + len(begin) : text.index(end)] == markdown(), (
        'regenerate: python -c \'import sys; sys.path[:0] = ["tests"]; '
        'from differential.known import markdown; print(markdown(), end="")\''
    )
