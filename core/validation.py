"""One way to turn a pydantic ``ValidationError`` into the user's sentence, for every front end.

The CLI prints ``training.method: 'lorax' is not allowed; use 'full', 'lora' or 'qlora'``; the
window shows the part after the field name under the field itself; the catalog, the probe report
reader and the probe pane prefix the same sentence with what they were reading. Validators that
already name their field (``"data.seq_len 9000 is longer than ..."``) are not named twice.
"""

from __future__ import annotations

import decimal
import unicodedata

from pydantic import ValidationError
from pydantic_core import ErrorDetails


def error_path(err: ErrorDetails) -> str:
    """The dotted field of one error ('training.method'); pydantic's validator frames are left
    out."""
    return ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))


def error_text(err: ErrorDetails) -> str:
    """One error as a sentence without its field: what a label under that field says."""
    msg = printable(str(err["msg"]).removeprefix("Value error, "))
    if err["type"] == "enum":
        expected = err.get("ctx", {}).get("expected", "")
        return f"'{printable(str(err.get('input')))}' is not allowed; use {expected}"
    if err["type"] == "missing":
        return "required"
    if err["type"] == "extra_forbidden":
        return "unknown field"
    return msg


def field_errors(exc: ValidationError) -> dict[str, str]:
    """Every error by field, the first one for a field winning (the window's per-field labels)."""
    errors: dict[str, str] = {}
    for err in exc.errors():
        errors.setdefault(error_path(err), error_text(err))
    return errors


def validation_message(exc: ValidationError, root: str = "", words: bool = False) -> str:
    """The first error as one sentence naming the field: 'training.method: ...'; ``root`` prefixes
    the field.

    ``words`` names the field in words ('data path' for data_path), for a status line in the window.
    """
    err = exc.errors()[0]
    field = ".".join(p for p in (root, error_path(err)) if p)
    text = error_text(err)
    if not field or text.startswith(field.split(".")[0] + "."):
        return text  # the validator already named the field
    return f"{field.replace('_', ' ') if words else field}: {text}"


def printable(text: str) -> str:
    """`text` with every line break and control or format character written as its escape (``\\n``,
    ``\\x1b``): a value echoed in a sentence ('unknown provider 'a\\nb'') stays on its line, and a
    terminal escape from a file or feed reaches no terminal."""
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if ch != " " and (unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"))
        else ch
        for ch in str(text)
    )


def one_sentence(text: str, most: int = 1000) -> str:
    """An error as one line a person reads: ``printable``, and past `most` characters cut in the
    middle (a 5,000-character name echoed back is noise; the sentence's start and its advice at the
    end are kept)."""
    line = printable(text)
    return line if len(line) <= most else f"{line[: most // 2]} … {line[-most // 2 :]}"


def shown_number(value: object) -> str:
    """A number as a sentence shows it: 'nan', '1e+30', '2147483648'; a long integer in powers of
    ten, read without a float (formatting 10**400 as a float overflows, and printing 5,000 digits is
    noise)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if value.bit_length() < 50 else f"{decimal.Decimal(value):.3g}"
    if isinstance(value, float):
        return f"{value:g}"
    # text typed in a field: 0, not '0'
    return printable(value if isinstance(value, str) else repr(value))[:60]
