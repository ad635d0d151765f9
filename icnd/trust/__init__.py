"""Trust: certificates as named data, trust anchors, a trust schema, and the
one validator everything uses to decide whom to believe (interface §13).

- `icnd.trust.cert`: certificates (make, issue, parse; from bytes, never files).
- `icnd.trust.schema`: the TOML trust schema and its name patterns.
- `icnd.trust.validator`: `Validator`, the single decision point.

Sans-IO: certificates a validation needs are fetched through a callable the
caller supplies, and the time comes from the caller too (`Validator`'s
``clock``, ``now=`` when making a certificate).  Certificate and schema files
are read and written by the shell, `icnd.keyfiles`.
"""

from icnd.trust.cert import Certificate, CertificateError, issue, parse_certificate, self_signed
from icnd.trust.schema import Pattern, Rule, Schema, SchemaError
from icnd.trust.validator import Validator, caller_allowed

__all__ = ["Certificate", "CertificateError", "Pattern", "Rule", "Schema", "SchemaError", "Validator",
           "caller_allowed", "issue", "parse_certificate", "self_signed"]
