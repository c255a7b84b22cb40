"""OTLP/HTTP wire formats: read an export request, write its answer or a failure status.

Binary protobuf (`application/x-protobuf`) and OTLP/JSON (`application/json`), optionally
gzip- or deflate-compressed. OTLP/JSON is protobuf's JSON mapping except that trace and span ids
are hex, not base64 (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding); field
names are lowerCamelCase, enums integers, unknown fields ignored.

Failures carry a google.rpc.Status (`message`, and the gRPC `code` for troubleshooting), as the
spec asks, in the request's encoding; the JSON form also keeps the house `detail` key.
"""

import base64
import json
import time
import zlib
from typing import Any, Literal

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from core.errors import DomainError, PayloadTooLarge

Encoding = Literal["protobuf", "json"]
CONTENT_TYPES: dict[Encoding, str] = {
    "protobuf": "application/x-protobuf",
    "json": "application/json",
}
_MEDIA_TYPES: dict[str, Encoding] = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
# zlib window bits: gzip framing, zlib framing (HTTP "deflate")
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
# Keys of OTLP messages that hold ids (Span, Span.Link, and the same in other signals).
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})


class Undecodable(DomainError):
    status_code = 400


class UnsupportedMediaType(DomainError):
    status_code = 415


def encoding_of(content_type: str | None) -> Encoding | None:
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return _MEDIA_TYPES.get(media_type)


# Decompression is bounded in work as well as in size: a body of many tiny gzip members (4.5 MB
# of empty ones: 21.9 s of CPU, and a 200) is refused past this many members or this long.
MAX_MEMBERS = 64
MAX_DECOMPRESS_SECONDS = 2.0
_CHUNK = 64 * 1024  # fed to zlib this much at a time: what it keeps unused is at most this


def decompressed(body: bytes, content_encoding: str | None, *, limit: int) -> bytes:
    """The body without its content coding, refusing (413) to grow past `limit` bytes, and
    (400) a gzip body of more than MAX_MEMBERS members or that takes longer than
    MAX_DECOMPRESS_SECONDS to inflate. The body is fed in chunks: zlib's `unused_data` (the
    rest after a member, copied at each member) stays small, so the work is linear."""
    coding = (content_encoding or "").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in _WBITS:
        raise UnsupportedMediaType(
            f"Content-Encoding '{coding[:50]}' is not supported; use gzip, deflate or none"
        )
    out = bytearray()
    deadline = time.monotonic() + MAX_DECOMPRESS_SECONDS
    view = memoryview(body)
    position, members = 0, 0
    inflater = None
    pending = b""  # the start of the next member, left over by the one that ended
    try:
        while position < len(body) or pending:
            if inflater is None:
                members += 1
                if members > MAX_MEMBERS:
                    raise Undecodable(
                        f"the {coding} body holds more than {MAX_MEMBERS} members; send one"
                    )
                inflater = zlib.decompressobj(_WBITS[coding])
            chunk: bytes | memoryview
            if pending:
                chunk, pending = pending, b""
            else:
                chunk, position = view[position : position + _CHUNK], position + _CHUNK
            out += inflater.decompress(chunk, limit + 1 - len(out))
            if len(out) > limit or inflater.unconsumed_tail:
                raise PayloadTooLarge(
                    f"the request body is over the limit of {limit} bytes once decompressed"
                )
            if inflater.eof:
                pending, inflater = inflater.unused_data, None
            if time.monotonic() > deadline:
                raise Undecodable(
                    f"the {coding} body took over {MAX_DECOMPRESS_SECONDS:g} s to decompress"
                )
        if inflater is not None:
            raise Undecodable(f"the {coding} body is truncated")
    except zlib.error as error:
        raise Undecodable(f"the body is not valid {coding}: {error}") from None
    return bytes(out)


def _ids_to_base64(value: Any, depth: int = 0) -> Any:
    """OTLP/JSON's hex ids turned into what protobuf's JSON parser expects (base64)."""
    if depth > 64:
        raise Undecodable("the JSON body is nested too deeply")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                try:
                    item = base64.b64encode(bytes.fromhex(item)).decode()
                except ValueError:
                    raise Undecodable(f"{key} '{item[:40]}' is not a hex string") from None
            else:
                item = _ids_to_base64(item, depth + 1)
            out[key] = item
        return out
    if isinstance(value, list):
        return [_ids_to_base64(item, depth + 1) for item in value]
    return value


def export_request_parse(body: bytes, encoding: Encoding) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    if encoding == "protobuf":
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError) as error:
            raise Undecodable(f"the body is not an ExportTraceServiceRequest: {error}") from None
        return message
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise Undecodable(f"the body is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise Undecodable("the body must be a JSON object (an ExportTraceServiceRequest)")
    try:
        json_format.ParseDict(_ids_to_base64(data), message, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as error:
        raise Undecodable(f"the body is not an OTLP/JSON trace export: {error}") from None
    return message


def export_response_body(
    encoding: Encoding, *, rejected_spans: int = 0, error_message: str = ""
) -> bytes:
    """ExportTraceServiceResponse; partial_success is set only when something was rejected."""
    response = ExportTraceServiceResponse()
    if rejected_spans or error_message:
        response.partial_success.rejected_spans = rejected_spans
        response.partial_success.error_message = error_message
    if encoding == "protobuf":
        return response.SerializeToString()
    return json_format.MessageToJson(response, indent=None).encode()


# HTTP status -> gRPC code of the Status body (the spec lets clients only log it).
GRPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 409: 10, 413: 8, 415: 3, 422: 3, 429: 8}
_UNKNOWN, _INTERNAL = 2, 13


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def status_body(encoding: Encoding, *, http_status: int, message: str) -> bytes:
    """google.rpc.Status {code = 1, message = 2}, encoded by hand: two fields do not warrant
    a dependency on googleapis-common-protos."""
    code = GRPC_CODES.get(http_status, _INTERNAL if http_status >= 500 else _UNKNOWN)
    if encoding == "json":
        return json.dumps({"detail": message, "code": code, "message": message}).encode()
    raw = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(raw)) + raw


def export_request_read(
    *, body: bytes, content_type: str | None, content_encoding: str | None, limit: int
) -> tuple[Encoding, ExportTraceServiceRequest]:
    """The request's encoding (its answer uses the same) and the decoded export."""
    encoding = encoding_of(content_type)
    if encoding is None:
        raise UnsupportedMediaType(
            "Content-Type must be application/x-protobuf or application/json (OTLP/HTTP)"
        )
    return encoding, export_request_parse(
        decompressed(body, content_encoding, limit=limit), encoding
    )


def failure_rewrite(*, content_type: str | None, status: int, content: bytes) -> tuple[bytes, str]:
    """A {"detail": ...} error of the API as the Status body an OTLP client expects."""
    try:
        detail = json.loads(content).get("detail", "")
    except (ValueError, AttributeError):
        detail = ""
    message = detail if isinstance(detail, str) else json.dumps(detail, default=str)
    encoding = encoding_of(content_type) or "json"
    return status_body(encoding, http_status=status, message=message), CONTENT_TYPES[encoding]
