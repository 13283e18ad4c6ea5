from http import HTTPStatus

from reflection_site.errors import ReflectionError


class SessionsError(ReflectionError):
    """Base of the conversation and gate errors."""


class TurnConflict(SessionsError):
    code = "turn_conflict"
    status = HTTPStatus.CONFLICT


class MessageTooLong(SessionsError):
    code = "message_too_long"
    status = HTTPStatus.UNPROCESSABLE_ENTITY
