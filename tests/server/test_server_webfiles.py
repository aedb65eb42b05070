"""The viewer's files served from memory (tpx_inspect/server/webfiles.py): every file as it is
on disk, revalidated by ETag, a changed file served anew, nothing outside the folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from tpx_inspect.server import create_app
from tpx_inspect.server.app import WEB_DIR


def test_every_viewer_file_is_served_as_it_is_on_disk():
    client = TestClient(create_app([]))
    files = [p for p in WEB_DIR.rglob("*") if p.is_file()]
    assert len(files) > 20
    for path in files:
        url = "/" + path.relative_to(WEB_DIR).as_posix()
        r = client.get(url)
        assert r.status_code == 200 and r.content == path.read_bytes(), url
        assert r.headers["cache-control"] == "no-cache"
        if path.suffix == ".js":
            assert r.headers["content-type"].startswith("text/javascript")
    index = client.get("/")
    assert index.status_code == 200 and index.content == (WEB_DIR / "index.html").read_bytes()


def test_a_file_is_revalidated_and_served_anew_once_changed(tmp_path: Path):
    web = tmp_path / "web"
    shutil.copytree(WEB_DIR, web)
    client = TestClient(create_app([], web_dir=web))
    first = client.get("/js/url.js")
    tag = first.headers["etag"]
    assert client.get("/js/url.js", headers={"If-None-Match": tag}).status_code == 304
    (web / "js" / "url.js").write_text("export const changed = 1;\n")
    again = client.get("/js/url.js", headers={"If-None-Match": tag})
    assert again.status_code == 200 and again.text == "export const changed = 1;\n"
    assert again.headers["etag"] != tag


def test_nothing_outside_the_folder_is_served(tmp_path: Path):
    web = tmp_path / "web"
    shutil.copytree(WEB_DIR, web)
    (tmp_path / "secret.txt").write_text("secret")
    (web / "link.txt").symlink_to(tmp_path / "secret.txt")
    client = TestClient(create_app([], web_dir=web))
    for url in ("/../secret.txt", "/js/../../secret.txt", "/%2e%2e/secret.txt", "/link.txt",
                "/js/%2e%2e/%2e%2e/secret.txt"):  # fmt: skip
        r = client.get(url)
        assert r.status_code == 404 and "secret" not in r.text, url
    assert client.get("/js/").status_code == 404 and client.get("/nope.js").status_code == 404
    assert client.post("/js/main.js").status_code == 405
