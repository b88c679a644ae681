# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any, cast

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.chat_completion_request import ChatCompletionRequest
from ...models.create_chat_completion_response_200 import CreateChatCompletionResponse200
from ...models.error_response import ErrorResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: ChatCompletionRequest,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/chat/completions",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | CreateChatCompletionResponse200 | ErrorResponse | None:
    if response.status_code == 200:
        response_200 = CreateChatCompletionResponse200.from_dict(response.json())

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

    if response.status_code == 502:
        response_502 = cast(Any, None)
        return response_502

    if response.status_code == 503:
        response_503 = cast(Any, None)
        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Any | CreateChatCompletionResponse200 | ErrorResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ChatCompletionRequest,
    authorization: None | str | Unset = UNSET,
) -> Response[Any | CreateChatCompletionResponse200 | ErrorResponse]:
    """Create Chat Completion

     A chat completion from a base model, a fine-tuned model or a checkpoint of this project (another
    project's
    model is 404). The first request for a fine-tuned model loads its adapter into the replica its
    adapter is
    routed to; a model no replica serves yet is started on a worker where the service does that (503
    ``model_starting`` with Retry-After while it starts).

    Args:
        authorization (None | str | Unset):
        body (ChatCompletionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CreateChatCompletionResponse200 | ErrorResponse]
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
    body: ChatCompletionRequest,
    authorization: None | str | Unset = UNSET,
) -> Any | CreateChatCompletionResponse200 | ErrorResponse | None:
    """Create Chat Completion

     A chat completion from a base model, a fine-tuned model or a checkpoint of this project (another
    project's
    model is 404). The first request for a fine-tuned model loads its adapter into the replica its
    adapter is
    routed to; a model no replica serves yet is started on a worker where the service does that (503
    ``model_starting`` with Retry-After while it starts).

    Args:
        authorization (None | str | Unset):
        body (ChatCompletionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CreateChatCompletionResponse200 | ErrorResponse
    """

    return sync_detailed(
        client=client,
        body=body,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: ChatCompletionRequest,
    authorization: None | str | Unset = UNSET,
) -> Response[Any | CreateChatCompletionResponse200 | ErrorResponse]:
    """Create Chat Completion

     A chat completion from a base model, a fine-tuned model or a checkpoint of this project (another
    project's
    model is 404). The first request for a fine-tuned model loads its adapter into the replica its
    adapter is
    routed to; a model no replica serves yet is started on a worker where the service does that (503
    ``model_starting`` with Retry-After while it starts).

    Args:
        authorization (None | str | Unset):
        body (ChatCompletionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CreateChatCompletionResponse200 | ErrorResponse]
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
    body: ChatCompletionRequest,
    authorization: None | str | Unset = UNSET,
) -> Any | CreateChatCompletionResponse200 | ErrorResponse | None:
    """Create Chat Completion

     A chat completion from a base model, a fine-tuned model or a checkpoint of this project (another
    project's
    model is 404). The first request for a fine-tuned model loads its adapter into the replica its
    adapter is
    routed to; a model no replica serves yet is started on a worker where the service does that (503
    ``model_starting`` with Retry-After while it starts).

    Args:
        authorization (None | str | Unset):
        body (ChatCompletionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CreateChatCompletionResponse200 | ErrorResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            authorization=authorization,
        )
    ).parsed
