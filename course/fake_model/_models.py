"""The model list: ``GET /v1/models`` names the one model this fake serves (any model name is accepted)."""

from __future__ import annotations

import json

from course.fake_model._state import MODEL_NAME, State
from course.fake_model._wire import Request, Responder

CREATED = 1_700_000_000
PATH = "/v1/models"


def model_object(model_id: str = MODEL_NAME) -> dict:
    return {"id": model_id, "object": "model", "created": CREATED, "owned_by": "course"}


def list_models(request: Request, responder: Responder, state: State) -> None:
    body = json.dumps({"object": "list", "data": [model_object()]}).encode("utf-8")
    responder.send(200, body, "application/json")


ROUTES = {("GET", PATH): list_models}
