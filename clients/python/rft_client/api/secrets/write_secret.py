# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.secret import Secret
from ...models.secret_create import SecretCreate
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: SecretCreate,
    authorization: None | str | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/secrets",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorResponse | Secret | None:
    if response.status_code == 201:
        response_201 = Secret.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = ErrorResponse.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorResponse.from_dict(response.json())

        return response_401

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
) -> Response[ErrorResponse | Secret]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: SecretCreate,
    authorization: None | str | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[ErrorResponse | Secret]:
    """Write Secret

     Write a secret of this project (a new name creates it, an existing one rotates it). The value is
    stored
    encrypted and never returned: the answer has its name and a hint. A job names it in its
    integrations:
    ``{"type": "wandb", "api_key_secret": NAME}``.

    Args:
        authorization (None | str | Unset):
        idempotency_key (None | str | Unset): Retry-safe POST: the same key with the same request
            replays the first response (24 h).
        body (SecretCreate): Body of ``POST /v1/secrets``: writes the secret, or rotates it when
            the name exists.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Secret]
    """

    kwargs = _get_kwargs(
        body=body,
        authorization=authorization,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: SecretCreate,
    authorization: None | str | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> ErrorResponse | Secret | None:
    """Write Secret

     Write a secret of this project (a new name creates it, an existing one rotates it). The value is
    stored
    encrypted and never returned: the answer has its name and a hint. A job names it in its
    integrations:
    ``{"type": "wandb", "api_key_secret": NAME}``.

    Args:
        authorization (None | str | Unset):
        idempotency_key (None | str | Unset): Retry-safe POST: the same key with the same request
            replays the first response (24 h).
        body (SecretCreate): Body of ``POST /v1/secrets``: writes the secret, or rotates it when
            the name exists.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Secret
    """

    return sync_detailed(
        client=client,
        body=body,
        authorization=authorization,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: SecretCreate,
    authorization: None | str | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[ErrorResponse | Secret]:
    """Write Secret

     Write a secret of this project (a new name creates it, an existing one rotates it). The value is
    stored
    encrypted and never returned: the answer has its name and a hint. A job names it in its
    integrations:
    ``{"type": "wandb", "api_key_secret": NAME}``.

    Args:
        authorization (None | str | Unset):
        idempotency_key (None | str | Unset): Retry-safe POST: the same key with the same request
            replays the first response (24 h).
        body (SecretCreate): Body of ``POST /v1/secrets``: writes the secret, or rotates it when
            the name exists.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | Secret]
    """

    kwargs = _get_kwargs(
        body=body,
        authorization=authorization,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: SecretCreate,
    authorization: None | str | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
) -> ErrorResponse | Secret | None:
    """Write Secret

     Write a secret of this project (a new name creates it, an existing one rotates it). The value is
    stored
    encrypted and never returned: the answer has its name and a hint. A job names it in its
    integrations:
    ``{"type": "wandb", "api_key_secret": NAME}``.

    Args:
        authorization (None | str | Unset):
        idempotency_key (None | str | Unset): Retry-safe POST: the same key with the same request
            replays the first response (24 h).
        body (SecretCreate): Body of ``POST /v1/secrets``: writes the secret, or rotates it when
            the name exists.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | Secret
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            authorization=authorization,
            idempotency_key=idempotency_key,
        )
    ).parsed
