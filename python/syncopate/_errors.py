"""The exception every Syncopate call raises on failure."""


class SyncopateError(RuntimeError):
    """A Syncopate call failed.

    Attributes:
        code: the status code's name, as gRPC and Abseil spell it: "UNAVAILABLE" (the coordinator
            or a store cannot be reached or is gone), "ABORTED" (this trainer was evicted),
            "DEADLINE_EXCEEDED" (no directive within the deadline), "INVALID_ARGUMENT" (bad
            parameters or options), "FAILED_PRECONDITION", "NOT_FOUND", ...
        message: what happened, in words.
    """

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
