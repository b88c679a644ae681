# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.http_validation_error import HTTPValidationError
from ...models.run_request import RunRequest
from ...models.run_response import RunResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: RunRequest,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/fine_tuning/alpha/graders/run",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> HTTPValidationError | RunResponse | None:
    if response.status_code == 200:
        response_200 = RunResponse.from_dict(response.json())

        return response_200

    if response.status_code == 422:
        response_422 = HTTPValidationError.from_dict(response.json())

        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[HTTPValidationError | RunResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: RunRequest,
    authorization: None | str | Unset = UNSET,
) -> Response[HTTPValidationError | RunResponse]:
    """Run Grader

     Score ``model_sample`` against ``item``: reward, sub-rewards and OpenAI's error flags. A score_model
    grader
    with its own ``endpoint`` is refused here (400): only the worker running a job calls a project's
    judge.

    Args:
        authorization (None | str | Unset):
        body (RunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HTTPValidationError | RunResponse]
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
    body: RunRequest,
    authorization: None | str | Unset = UNSET,
) -> HTTPValidationError | RunResponse | None:
    """Run Grader

     Score ``model_sample`` against ``item``: reward, sub-rewards and OpenAI's error flags. A score_model
    grader
    with its own ``endpoint`` is refused here (400): only the worker running a job calls a project's
    judge.

    Args:
        authorization (None | str | Unset):
        body (RunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HTTPValidationError | RunResponse
    """

    return sync_detailed(
        client=client,
        body=body,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: RunRequest,
    authorization: None | str | Unset = UNSET,
) -> Response[HTTPValidationError | RunResponse]:
    """Run Grader

     Score ``model_sample`` against ``item``: reward, sub-rewards and OpenAI's error flags. A score_model
    grader
    with its own ``endpoint`` is refused here (400): only the worker running a job calls a project's
    judge.

    Args:
        authorization (None | str | Unset):
        body (RunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HTTPValidationError | RunResponse]
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
    body: RunRequest,
    authorization: None | str | Unset = UNSET,
) -> HTTPValidationError | RunResponse | None:
    """Run Grader

     Score ``model_sample`` against ``item``: reward, sub-rewards and OpenAI's error flags. A score_model
    grader
    with its own ``endpoint`` is refused here (400): only the worker running a job calls a project's
    judge.

    Args:
        authorization (None | str | Unset):
        body (RunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HTTPValidationError | RunResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            authorization=authorization,
        )
    ).parsed
