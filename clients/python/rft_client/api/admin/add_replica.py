# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.inference_replica_view import InferenceReplicaView
from ...models.replica_add import ReplicaAdd
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: ReplicaAdd,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/admin/inference/replicas",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | InferenceReplicaView | None:
    if response.status_code == 201:
        response_201 = InferenceReplicaView.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = ErrorResponse.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorResponse.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorResponse.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = ErrorResponse.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = ErrorResponse.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ErrorResponse.from_dict(response.json())

        return response_413

    if response.status_code == 422:
        response_422 = ErrorResponse.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = ErrorResponse.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorResponse | InferenceReplicaView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ReplicaAdd,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | InferenceReplicaView]:
    """Add Replica

     Register an operator's server (``vllm serve`` with run-time LoRA loading, e.g. python -m
    worker.inference_server) of ``base_model``: routed to from the next refresh (seconds).

    Args:
        authorization (None | str | Unset):
        body (ReplicaAdd):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | InferenceReplicaView]
    """

    kwargs = _get_kwargs(
        body=body,
        authorization=authorization,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: ReplicaAdd,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | InferenceReplicaView | None:
    """Add Replica

     Register an operator's server (``vllm serve`` with run-time LoRA loading, e.g. python -m
    worker.inference_server) of ``base_model``: routed to from the next refresh (seconds).

    Args:
        authorization (None | str | Unset):
        body (ReplicaAdd):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | InferenceReplicaView
    """

    return sync_detailed(
        client=client,
        body=body,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ReplicaAdd,
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | InferenceReplicaView]:
    """Add Replica

     Register an operator's server (``vllm serve`` with run-time LoRA loading, e.g. python -m
    worker.inference_server) of ``base_model``: routed to from the next refresh (seconds).

    Args:
        authorization (None | str | Unset):
        body (ReplicaAdd):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | InferenceReplicaView]
    """

    kwargs = _get_kwargs(
        body=body,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: ReplicaAdd,
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | InferenceReplicaView | None:
    """Add Replica

     Register an operator's server (``vllm serve`` with run-time LoRA loading, e.g. python -m
    worker.inference_server) of ``base_model``: routed to from the next refresh (seconds).

    Args:
        authorization (None | str | Unset):
        body (ReplicaAdd):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | InferenceReplicaView
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            authorization=authorization,
        )
    ).parsed
