# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_response import ErrorResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    training_run_id: str,
    training_checkpoint_id: str,
    *,
    authorization: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(authorization, Unset):
        headers["authorization"] = authorization

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/training_runs/{training_run_id}/checkpoints/{training_checkpoint_id}/content".format(
            training_run_id=quote(str(training_run_id), safe=""),
            training_checkpoint_id=quote(str(training_checkpoint_id), safe=""),
        ),
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | ErrorResponse | None:
    if response.status_code == 200:
        response_200 = cast(Any, None)
        return response_200

    if response.status_code == 302:
        response_302 = cast(Any, None)
        return response_302

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | ErrorResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    training_run_id: str,
    training_checkpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    authorization: None | str | Unset = UNSET,
) -> Response[Any | ErrorResponse]:
    """Download Training Checkpoint

     A checkpoint of the run, by its ``ftckpt-`` id, as a tar: streamed from a local store, or a 302 to a
    presigned S3 URL (5 minutes), as a job's checkpoint is.

    Args:
        training_run_id (str):
        training_checkpoint_id (str):
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorResponse]
    """

    kwargs = _get_kwargs(
        training_run_id=training_run_id,
        training_checkpoint_id=training_checkpoint_id,
        authorization=authorization,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    training_run_id: str,
    training_checkpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    authorization: None | str | Unset = UNSET,
) -> Any | ErrorResponse | None:
    """Download Training Checkpoint

     A checkpoint of the run, by its ``ftckpt-`` id, as a tar: streamed from a local store, or a 302 to a
    presigned S3 URL (5 minutes), as a job's checkpoint is.

    Args:
        training_run_id (str):
        training_checkpoint_id (str):
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorResponse
    """

    return sync_detailed(
        training_run_id=training_run_id,
        training_checkpoint_id=training_checkpoint_id,
        client=client,
        authorization=authorization,
    ).parsed


async def asyncio_detailed(
    training_run_id: str,
    training_checkpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    authorization: None | str | Unset = UNSET,
) -> Response[Any | ErrorResponse]:
    """Download Training Checkpoint

     A checkpoint of the run, by its ``ftckpt-`` id, as a tar: streamed from a local store, or a 302 to a
    presigned S3 URL (5 minutes), as a job's checkpoint is.

    Args:
        training_run_id (str):
        training_checkpoint_id (str):
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorResponse]
    """

    kwargs = _get_kwargs(
        training_run_id=training_run_id,
        training_checkpoint_id=training_checkpoint_id,
        authorization=authorization,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    training_run_id: str,
    training_checkpoint_id: str,
    *,
    client: AuthenticatedClient | Client,
    authorization: None | str | Unset = UNSET,
) -> Any | ErrorResponse | None:
    """Download Training Checkpoint

     A checkpoint of the run, by its ``ftckpt-`` id, as a tar: streamed from a local store, or a 302 to a
    presigned S3 URL (5 minutes), as a job's checkpoint is.

    Args:
        training_run_id (str):
        training_checkpoint_id (str):
        authorization (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorResponse
    """

    return (
        await asyncio_detailed(
            training_run_id=training_run_id,
            training_checkpoint_id=training_checkpoint_id,
            client=client,
            authorization=authorization,
        )
    ).parsed
