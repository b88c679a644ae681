"""Object store: a local folder by default, any S3-compatible server through boto3 otherwise.

Both the API (uploads, downloads) and the worker (datasets in, checkpoints out) use it. Writes are whole-object
(a local write goes to a temp file renamed into place), so a reader never sees half an object. An S3 failure is
raised as ``runtime.errors.StoreError`` (the botocore error is its cause), so callers tell an unreachable store
from their own bugs by type.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from runtime.errors import StoreError

if TYPE_CHECKING:
    from runtime.settings import CommonSettings

CHUNK = 1024 * 1024


class ObjectStore(Protocol):
    def put_file(self, key: str, path: Path) -> None: ...

    def get_file(self, key: str, path: Path) -> None: ...

    def iter_bytes(self, key: str) -> Iterator[bytes]: ...

    def exists(self, key: str) -> bool: ...

    def delete(self, key: str) -> None: ...

    def list_keys(self, prefix: str) -> list[str]: ...

    def presigned_url(
        self, key: str, seconds: int, *, filename: str | None = None, content_type: str | None = None
    ) -> str | None:
        """A URL that GETs the object without credentials for ``seconds``; None when the store has none.

        Large adapters then flow from the store to the client directly instead of through an API worker.
        """
        ...


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root):
            raise ValueError(f"object key escapes the store: {key!r}")
        return path

    def put_file(self, key: str, path: Path) -> None:
        dest = self._path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.replace(tmp, dest)

    def get_file(self, key: str, path: Path) -> None:
        shutil.copyfile(self._path(key), path)

    def iter_bytes(self, key: str) -> Iterator[bytes]:
        with self._path(key).open("rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()

    def list_keys(self, prefix: str) -> list[str]:
        keys = (p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())
        return sorted(k for k in keys if k.startswith(prefix) and not Path(k).name.startswith(".part-"))

    def presigned_url(
        self, key: str, seconds: int, *, filename: str | None = None, content_type: str | None = None
    ) -> str | None:
        return None  # a local folder has no URL of its own: the API streams the bytes


@contextlib.contextmanager
def _s3_errors(action: str, key: str) -> Iterator[None]:
    """boto's failures (unreachable endpoint, refused credentials, missing bucket; boto3's own, such as a failed
    managed upload) as StoreError."""
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError, Boto3Error) as exc:
        raise StoreError(f"object store: {action} {key!r} failed: {exc}") from exc


class S3Store:
    def __init__(self, settings: CommonSettings, public_endpoint_url: str | None = None) -> None:
        """``public_endpoint_url``: where clients reach the store, when not where this process does (the API's
        presigned download links in compose, where S3 is ``minio:9000`` inside and ``localhost:9000`` outside)."""
        if not settings.s3_bucket:
            raise ValueError("S3_BUCKET must be set when S3_ENDPOINT_URL is")
        self.bucket = settings.s3_bucket
        self._settings = settings
        self.client = self._client(settings.s3_endpoint_url)
        self._public_endpoint_url = public_endpoint_url
        self._public_client: Any = None  # signs URLs for the host clients use (SigV4 signs the host)

    def _client(self, endpoint_url: str | None) -> Any:
        import boto3
        from botocore.config import Config

        s = self._settings
        return boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=s.s3_region,
            aws_access_key_id=s.aws_access_key_id,
            aws_secret_access_key=s.aws_secret_access_key,
            # explicit: botocore otherwise presigns with legacy SigV2, which MinIO and newer AWS regions refuse
            config=Config(signature_version="s3v4"),
        )

    def put_file(self, key: str, path: Path) -> None:
        with _s3_errors("upload of", key):
            self.client.upload_file(str(path), self.bucket, key)

    def get_file(self, key: str, path: Path) -> None:
        with _s3_errors("download of", key):
            self.client.download_file(self.bucket, key, str(path))

    def iter_bytes(self, key: str) -> Iterator[bytes]:
        with _s3_errors("read of", key):
            body: BinaryIO = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
            while chunk := body.read(CHUNK):
                yield chunk

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        with _s3_errors("lookup of", key):
            try:
                self.client.head_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                    return False
                raise
        return True

    def delete(self, key: str) -> None:
        with _s3_errors("delete of", key):
            self.client.delete_object(Bucket=self.bucket, Key=key)

    def list_keys(self, prefix: str) -> list[str]:
        with _s3_errors("listing of", prefix):
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
            return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))

    def presigned_url(
        self, key: str, seconds: int, *, filename: str | None = None, content_type: str | None = None
    ) -> str | None:
        """A presigned GET (signed locally, no network call); S3 answers with these filename and content type."""
        client = self.client
        if self._public_endpoint_url:
            if self._public_client is None:
                self._public_client = self._client(self._public_endpoint_url)
            client = self._public_client
        params = {"Bucket": self.bucket, "Key": key}
        if filename:
            params["ResponseContentDisposition"] = f'attachment; filename="{filename}"'
        if content_type:
            params["ResponseContentType"] = content_type
        with _s3_errors("signing of", key):
            url: str = client.generate_presigned_url("get_object", Params=params, ExpiresIn=seconds)
        return url


def make_store(settings: CommonSettings, *, public_endpoint_url: str | None = None) -> ObjectStore:
    if settings.s3_endpoint_url or settings.s3_bucket:
        return S3Store(settings, public_endpoint_url)
    return LocalStore(settings.objects_dir)
