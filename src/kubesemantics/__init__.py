"""Kubernetes semantics shared by the operator (`kuberay`) and the control plane (`localkube`).

One home for the knowledge both sides need to read objects as Kubernetes reads them: resource quantities
and their sums (`quantity`), metav1.Time and MicroTime (`times`), status conditions (`conditions`),
generated names (`names`), Go's parsers whose texts surface in Kubernetes messages, durations among them (`goparse`),
label and field selectors (`selectors`), the Kubernetes CEL library (`cellib`), and what structural-schema
checks share: JSON values as the API server reads them (`jsonvalue`), its error words, defaulting and
formats (`schema`), and the metav1 `Status` body of a refusal (`status`). Its errors are ValueErrors under
`errors.SemanticsError`.

A leaf: pure functions, no I/O, and it imports neither `kuberay` nor `localkube` (pyproject's
import-linter contracts hold it to that).
"""
