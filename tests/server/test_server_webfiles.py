"""The viewer's files served from memory (tpx_inspect/server/webfiles.py): every file as it is
on disk, the page naming its files under a version that changes with them (cached for good),
revalidated by ETag, a changed file served anew, nothing outside the folder."""

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
    version = client.get("/").text.split('src="v/')[1].split("/")[0]
    for path in files:
        name = path.relative_to(WEB_DIR).as_posix()
        for url, cache in ((f"/{name}", "no-cache"), (f"/v/{version}/{name}", "immutable")):
            r = client.get(url)
            assert r.status_code == 200 and cache in r.headers["cache-control"], url
            if name != "index.html":
                assert r.content == path.read_bytes(), url
            if path.suffix == ".js":
                assert r.headers["content-type"].startswith("text/javascript")


def test_the_page_names_its_files_under_the_version_of_the_folder(tmp_path: Path):
    web = tmp_path / "web"
    shutil.copytree(WEB_DIR, web)
    client = TestClient(create_app([], web_dir=web))
    page = client.get("/")
    assert page.headers["cache-control"] == "no-cache"
    disk = (web / "index.html").read_text()
    version = page.text.split('src="v/')[1].split("/")[0]
    assert page.text == disk.replace('="js/', f'="v/{version}/js/').replace(
        'href="style.css"', f'href="v/{version}/style.css"'
    )
    assert client.get("/index.html").text == page.text
    (web / "js" / "url.js").write_text("export const changed = 1;\n")
    again = client.get("/", headers={"If-None-Match": page.headers["etag"]})
    assert again.status_code == 200 and f"v/{version}/" not in again.text, "a new version"
    new = again.text.split('src="v/')[1].split("/")[0]
    r = client.get(f"/v/{new}/js/url.js")
    assert r.text == "export const changed = 1;\n" and "immutable" in r.headers["cache-control"]
    old = client.get(f"/v/{version}/js/url.js")  # a page of the old version: not kept for good
    assert old.headers["cache-control"] == "no-cache"


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
    (web / "dangling.txt").symlink_to(web / "nowhere")
    client = TestClient(create_app([], web_dir=web))
    for url in ("/../secret.txt", "/js/../../secret.txt", "/%2e%2e/secret.txt", "/link.txt",
                "/js/%2e%2e/%2e%2e/secret.txt"):  # fmt: skip
        r = client.get(url)
        assert r.status_code == 404 and "secret" not in r.text, url
    assert client.get("/js/").status_code == 404 and client.get("/nope.js").status_code == 404
    assert client.get("/dangling.txt").status_code == 404 and client.get("/").status_code == 200
    assert client.head("/js/main.js").status_code == 200
    assert client.post("/js/main.js").status_code == 405
