"""The root of kubesemantics' errors: `SemanticsError`, a ValueError (the text is not what Kubernetes would
read), under which each parser raises its own (`goparse.GoParseError`, `quantity.QuantityError`,
`selectors.SelectorError`)."""


class SemanticsError(ValueError):
    """A text Kubernetes would refuse; the message is the one Kubernetes (or Go) gives."""
