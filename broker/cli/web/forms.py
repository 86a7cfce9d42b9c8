"""Reading a posted form: bounded, URL-encoded only, and carrying the console's own token.

The body is read up to ``MAX_FORM_BYTES`` (a produced value may be up to a MiB, Kafka's default
message.max.bytes) and at most ``MAX_FIELDS`` fields are parsed, so a client cannot make the
console buffer more.  Every form the console serves carries a token made when it started; a
post without it is refused, so another web page open in the same browser cannot make the
console change the cluster (cross-site request forgery) even with ``--allow-writes``.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.requests import Request

from wire.primitives import INT32_MAX

MAX_FORM_BYTES = 1024 * 1024 + 64 * 1024
MAX_FIELDS = 20
URLENCODED = "application/x-www-form-urlencoded"


async def read_form(request: Request, token: str) -> dict[str, str]:
    """The posted fields (the last value of each); 413, 415 or 403 when the post is not one of
    the console's forms."""
    if request.headers.get("content-type", "").split(";")[0].strip() != URLENCODED:
        raise HTTPException(415, "the console accepts only its own URL-encoded forms")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, f"a form may carry at most {MAX_FORM_BYTES} bytes")
    try:
        fields = dict(
            parse_qsl(
                body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FIELDS, strict_parsing=False
            )
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise HTTPException(400, f"the form could not be read: {exc}") from exc
    if not hmac.compare_digest(fields.pop("token", ""), token):
        raise HTTPException(403, "this form did not come from this console (reload the page and try again)")
    return fields


def whole_number(
    fields: dict[str, str], name: str, default: int | None = None, highest: int = INT32_MAX
) -> int | None:
    """A field as an int in [-1, highest] (what its protocol field can carry); ``default`` when
    empty; a 400 naming the field otherwise."""
    text = fields.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError as exc:
        raise HTTPException(400, f"{name} must be a whole number, not {text!r}") from exc
    if not -1 <= value <= highest:
        raise HTTPException(400, f"{name} must be between -1 and {highest}")
    return value
