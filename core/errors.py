"""Domain errors raised by services and mapped to HTTP statuses in one place (the root API)."""


class DomainError(Exception):
    status_code = 400

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotFound(DomainError):
    status_code = 404


class PermissionDenied(DomainError):
    status_code = 403


class Conflict(DomainError):
    status_code = 409


class PayloadTooLarge(DomainError):
    status_code = 413


class InvalidInput(DomainError):
    status_code = 422
