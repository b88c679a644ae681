# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...models.list_files_order import ListFilesOrder
from ...models.list_response_file_object import ListResponseFileObject
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    purpose: None | str | Unset = UNSET,
    limit: int | Unset = 10000,
    after: None | str | Unset = UNSET,
    order: ListFilesOrder | Unset = "desc",
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    params: dict[str, Any] = {}

    json_purpose: None | str | Unset
    if isinstance(purpose, Unset):
        json_purpose = UNSET
    else:
        json_purpose = purpose
    params["purpose"] = json_purpose

    params["limit"] = limit

    json_after: None | str | Unset
    if isinstance(after, Unset):
        json_after = UNSET
    else:
        json_after = after
    params["after"] = json_after

    json_order: str | Unset = UNSET
    if not isinstance(order, Unset):
        json_order = order

    params["order"] = json_order

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/files",
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorResponse | ListResponseFileObject | None:
    if response.status_code == 200:
        response_200 = ListResponseFileObject.from_dict(response.json())

        return response_200

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
) -> Response[ErrorResponse | ListResponseFileObject]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    purpose: None | str | Unset = UNSET,
    limit: int | Unset = 10000,
    after: None | str | Unset = UNSET,
    order: ListFilesOrder | Unset = "desc",
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | ListResponseFileObject]:
    """List Files

     The project's files, newest first by default (OpenAI's defaults: limit 10,000, ``after`` cursor).

    Args:
        purpose (None | str | Unset):
        limit (int | Unset):  Default: 10000.
        after (None | str | Unset):
        order (ListFilesOrder | Unset):  Default: 'desc'.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ListResponseFileObject]
    """

    kwargs = _get_kwargs(
        purpose=purpose,
        limit=limit,
        after=after,
        order=order,
        authorization=authorization,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    purpose: None | str | Unset = UNSET,
    limit: int | Unset = 10000,
    after: None | str | Unset = UNSET,
    order: ListFilesOrder | Unset = "desc",
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | ListResponseFileObject | None:
    """List Files

     The project's files, newest first by default (OpenAI's defaults: limit 10,000, ``after`` cursor).

    Args:
        purpose (None | str | Unset):
        limit (int | Unset):  Default: 10000.
        after (None | str | Unset):
        order (ListFilesOrder | Unset):  Default: 'desc'.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ListResponseFileObject
    """

    return sync_detailed(
        client=client,
        purpose=purpose,
        limit=limit,
        after=after,
        order=order,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    purpose: None | str | Unset = UNSET,
    limit: int | Unset = 10000,
    after: None | str | Unset = UNSET,
    order: ListFilesOrder | Unset = "desc",
    authorization: None | str | Unset = UNSET,
) -> Response[ErrorResponse | ListResponseFileObject]:
    """List Files

     The project's files, newest first by default (OpenAI's defaults: limit 10,000, ``after`` cursor).

    Args:
        purpose (None | str | Unset):
        limit (int | Unset):  Default: 10000.
        after (None | str | Unset):
        order (ListFilesOrder | Unset):  Default: 'desc'.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ListResponseFileObject]
    """

    kwargs = _get_kwargs(
        purpose=purpose,
        limit=limit,
        after=after,
        order=order,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    purpose: None | str | Unset = UNSET,
    limit: int | Unset = 10000,
    after: None | str | Unset = UNSET,
    order: ListFilesOrder | Unset = "desc",
    authorization: None | str | Unset = UNSET,
) -> ErrorResponse | ListResponseFileObject | None:
    """List Files

     The project's files, newest first by default (OpenAI's defaults: limit 10,000, ``after`` cursor).

    Args:
        purpose (None | str | Unset):
        limit (int | Unset):  Default: 10000.
        after (None | str | Unset):
        order (ListFilesOrder | Unset):  Default: 'desc'.
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ListResponseFileObject
    """

    return (
        await asyncio_detailed(
            client=client,
            purpose=purpose,
            limit=limit,
            after=after,
            order=order,
            authorization=authorization,
        )
    ).parsed
