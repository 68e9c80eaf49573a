#!/usr/bin/env python3
"""Extract a deterministic corpus of concrete shell commands from tldr-pages.

Usage:
    python3 extract.py GIT_DIR [OUT_DIR]

GIT_DIR is a (bare) clone of https://github.com/tldr-pages/tldr. The pages are
read from HEAD with `git cat-file --batch`, so no work tree is needed. OUT_DIR (default: the
directory of this script) receives commands.txt and paths_used.txt (every relative
path the kept commands use); statistics go to stderr.

Steps:
  1. Read every pages/common/*.md and pages/linux/*.md at HEAD, sorted by page
     name (common before linux for a name present in both).
  2. Take each example line: a line that starts and ends with a backtick and
     follows a "- description" line.
  3. Substitute every {{placeholder}} with a concrete value that exists in the
     tree built by make_tree.sh (see subst()). Escaped braces (\\{\\{ \\}\\})
     become literal braces, as the tldr client specification requires.
  4. Drop lines that still contain "{{" (this also drops the few commands whose
     literal text contains "{{", e.g. Go-template format strings), lines with a
     control or non-ASCII character, and exact duplicates (first one kept).
  5. Keep a deterministic ~1/6 sample: a line is kept when the first 8 hex
     digits of sha256("<platform>/<page>\\n<raw example line>") are below
     SAMPLE_THRESHOLD. The sample does not depend on the substitution rules.
  6. Write the kept lines in page order to commands.txt.
"""
import hashlib
import os
import re
import subprocess
import sys

PLATFORMS = ("common", "linux")
SAMPLE_THRESHOLD = 0x2B000000  # out of 0x100000000, about 16.8 %

# --------------------------------------------------------------------------
# Concrete values. Every relative path produced below exists in the tree made
# by make_tree.sh (outputs go into the existing, empty-but-tracked out/ dir).
# --------------------------------------------------------------------------

EXT_FILES = {
    "txt": ["notes.txt", "docs/todo.txt"],
    "md": ["README.md", "docs/guide.md"],
    "rs": ["src/main.rs", "src/lib.rs"],
    "toml": ["Cargo.toml", "config/app.toml"],
    "json": ["package.json", "config/settings.json"],
    "csv": ["data.csv", "fixtures/sample2.csv"],
    "sh": ["script.sh", "scripts/deploy.sh"],
    "py": ["scripts/build.py", "scripts/check.py"],
    "js": ["web/app.js", "web/util.js"],
    "ts": ["web/index.ts", "web/types.ts"],
    "html": ["web/index.html", "docs/index.html"],
    "css": ["web/style.css", "fixtures/sample2.css"],
    "png": ["assets/logo.png", "assets/icon.png"],
    "jpg": ["assets/photo.jpg", "fixtures/sample2.jpg"],
    "jpeg": ["assets/photo.jpg", "fixtures/sample2.jpg"],
    "gif": ["assets/anim.gif", "fixtures/sample2.gif"],
    "svg": ["assets/diagram.svg", "fixtures/sample2.svg"],
    "pdf": ["docs/manual.pdf", "fixtures/sample2.pdf"],
    "zip": ["archive.zip", "fixtures/sample2.zip"],
    "gz": ["archive.tar.gz", "fixtures/sample2.gz"],
    "tar.gz": ["archive.tar.gz", "fixtures/sample2.tar.gz"],
    "tgz": ["archive.tar.gz", "fixtures/sample2.tar.gz"],
    "tar": ["archive.tar", "fixtures/sample2.tar"],
    "yaml": ["config/app.yaml", "docker-compose.yaml"],
    "yml": ["config/app.yaml", "docker-compose.yaml"],
    "conf": ["config/app.conf", "fixtures/sample2.conf"],
    "cfg": ["config/app.conf", "fixtures/sample2.cfg"],
    "log": ["logs/app.log", "logs/error.log"],
    "c": ["native/hello.c", "fixtures/sample2.c"],
    "h": ["native/hello.h", "fixtures/sample2.h"],
    "cpp": ["native/hello.cpp", "fixtures/sample2.cpp"],
    "go": ["tools/main.go", "fixtures/sample2.go"],
    "sql": ["db/schema.sql", "fixtures/sample2.sql"],
    "xml": ["config/app.xml", "fixtures/sample2.xml"],
    "pem": ["keys/cert.pem", "fixtures/sample2.pem"],
    "crt": ["keys/cert.pem", "fixtures/sample2.crt"],
    "key": ["keys/id_ed25519", "fixtures/sample2.key"],
    "pub": ["keys/id_ed25519.pub", "fixtures/sample2.pub"],
    "patch": ["fixtures/fix.patch", "fixtures/sample2.patch"],
    "diff": ["fixtures/fix.patch", "fixtures/sample2.diff"],
    "lock": ["Cargo.lock", "fixtures/sample2.lock"],
}
# Plain file names that exist verbatim in the tree (bare {{data.csv}} etc.).
TREE_NAMES = {
    "data.csv", "notes.txt", "README.md", "Cargo.toml", "Cargo.lock", "package.json",
    "script.sh", "Makefile", "archive.zip", "archive.tar.gz", "archive.tar",
    "requirements.txt", "Dockerfile", ".gitignore", "docker-compose.yaml",
}

OUT_DIR = "out"

# Extensions that make a bare literal like {{source.tex}} a file name (not a domain).
LITERAL_FILE_EXTS = set("""
txt csv tex po gv yaml squashfs wasm fa img mp4 png iso jpeg xml html tar.gz jar yml pem js json
md desktop dump puml rar tar key gml pdf sh cfg sif bz2 wav xdot bin lz4 diff proto svg pcap css
pgc gxl asm scss wat mp3 stl obj cpio gpg c jpg xlsx py mmd onnx log zst zip hex bc pub mkv lua
srt ini tsv tgz 7z o cpp webp ps1 exe hs service crt avi journal cap xls toml ico gif rpm xz gz
scala swift asc csr erb nix rs go sql patch conf h java rb php ts mov flac ogg
""".split())
SRC_DIR_ALTS = ["src", "docs", "tests", "assets"]

# Path placeholders without an extension, by (last word of the) basename.
NOEXT_PATHS = [
    (r"(file_or_directory|file_or_dir|file_or_folder)", ["docs", "notes.txt", "src"]),
    (r"(directory|dir|folder|files|images|project|repo|repository|workspace|"
     r"mount_point|mountpoint|mount|source_directory|input_directory|share|store|"
     r"cipher_directory|root|flake|notebook|profiles|data_dir|backup_dir|"
     r"build_directory|module|crate|workdir|cwd|worktree|tree|site|package)",
     SRC_DIR_ALTS),
    (r"(binary|executable|program|app|application|bin|tool)", ["bin/tool", "script.sh"]),
    (r"(script)", ["script.sh", "scripts/deploy.sh"]),
    (r"(archive|tarball|compressed_file|compressed|backup)", ["archive.tar.gz", "archive.zip"]),
    (r"(image|image_file|picture|photo)", ["assets/logo.png", "assets/photo.jpg"]),
    (r"(key|private_key|key_file|keyfile|identity|secret|password_file)", ["keys/id_ed25519"]),
    (r"(cert|certificate)", ["keys/cert.pem"]),
    (r"(config|config_file|configuration_file|configuration|settings|profile|manifest)",
     ["config/app.toml", "config/app.yaml"]),
    (r"(log|log_file|logfile)", ["logs/app.log"]),
    (r"(data|dataset|database|db)", ["data.csv"]),
    (r"(dockerfile)", ["Dockerfile"]),
    (r"(makefile)", ["Makefile"]),
    (r"(device|device_file|partition|block_device|disk|luks2_block_device|btrfs_filesystem)",
     ["/dev/sdb1"]),
]

OUTPUT_WORDS = re.compile(r"^(output|out|new|destination|dest|target|result|backup_output)"
                          r"|(_output|_destination|_target|_copy)$")

# Descriptive placeholder names -> value (first entry) and variants (later entries).
WORDS = {
    "command": ["ls", "pwd", "date"], "cmd": ["ls", "pwd"], "command_name": ["ls"],
    "command_arguments": ["-l"], "arguments": ["-l"], "args": ["-l"], "argument": ["-l"],
    "options": ["-v"], "option": ["-v"], "opt": ["-v"], "flags": ["-v"],
    "subcommand": ["help"], "program": ["ls"], "executable": ["ls"], "shell": ["bash"],
    "username": ["alice", "bob", "carol"], "user": ["alice", "bob"], "user_name": ["alice"],
    "owner": ["alice"], "author": ["alice"], "me": ["me"], "userid": ["1000"], "uid": ["1000"],
    "group": ["developers", "staff"], "group_name": ["developers"], "gid": ["1000"],
    "password": ["hunter2"], "passphrase": ["hunter2"], "new_password": ["hunter3"],
    "token": ["abc123"], "access_token": ["abc123"], "secret": ["s3cret"], "api_key": ["abc123"],
    "email": ["alice@example.com", "bob@example.com"],
    "host": ["example.com", "example.org"], "hostname": ["example.com", "example.org"],
    "remote_host": ["example.com"], "server": ["example.com"], "domain": ["example.com"],
    "domain_name": ["example.com"], "ip_or_hostname": ["example.com"],
    "hostname_or_ip": ["example.com"], "remote": ["origin", "upstream"],
    "ip": ["192.168.1.10", "192.168.1.11"], "ip_address": ["192.168.1.10", "192.168.1.11"],
    "address": ["192.168.1.10", "192.168.1.11"], "subnet": ["192.168.1.0/24"],
    "gateway": ["192.168.1.1"], "mac_address": ["00:11:22:33:44:55"], "mac": ["00:11:22:33:44:55"],
    "port": ["8080", "8081"], "local_port": ["8080"], "remote_port": ["80"],
    "url": ["https://example.com", "https://example.org"], "uri": ["https://example.com"],
    "repository_url": ["https://github.com/example/repo.git"],
    "remote_repository_location": ["https://github.com/example/repo.git"],
    "repository": ["example/repo"], "repository_name": ["repo"], "repo": ["example/repo"],
    "repo_name": ["repo"], "organization": ["example"], "organization_name": ["example"],
    "branch": ["main", "feature-x"], "branch_name": ["feature-x", "main"],
    "remote_name": ["origin", "upstream"], "tag": ["v1.0.0", "v1.1.0"], "tag_name": ["v1.0.0"],
    "commit": ["HEAD~1", "HEAD"], "commit_hash": ["a1b2c3d"], "revision": ["HEAD", "HEAD~1"],
    "hash": ["a1b2c3d"], "revset": ["@"], "revsets": ["@"], "rev": ["HEAD"],
    "message": ["update-docs"], "title": ["Report"], "description": ["demo"],
    "comment": ["checked"], "subject": ["hello"],
    "name": ["demo", "demo2", "demo3"], "new_name": ["renamed"], "alias": ["ll"],
    "alias_name": ["ll"], "label": ["bug"], "project": ["demo"], "project_name": ["demo"],
    "app": ["myapp"], "app_name": ["myapp"], "application_name": ["myapp"],
    "package": ["htop", "tree", "jq"], "package_name": ["htop", "tree"], "packages": ["htop"],
    "dependency": ["htop"], "module": ["json"], "module_name": ["json"], "crate": ["serde"],
    "library_name": ["libssl"], "gem_name": ["rails"], "plugin": ["git"], "plugin_name": ["git"],
    "version": ["1.2.3", "1.2.4"], "node_version": ["20"], "kernel_version": ["6.1.0"],
    "toolchain": ["stable"], "release": ["stable"],
    "container": ["web", "db"], "container_name": ["web", "db"], "container_id": ["3f4e5d6c7b8a"],
    "image": ["nginx", "alpine"], "image_name": ["nginx", "alpine"], "image_id": ["3f4e5d6c7b8a"],
    "pod_name": ["web-0"], "namespace": ["default"], "deployment_name": ["web"],
    "node_name": ["node1"], "node": ["node1"], "cluster_name": ["prod"], "context_name": ["prod"],
    "service": ["nginx", "sshd"], "service_name": ["nginx", "sshd"],
    "unit": ["nginx.service", "sshd.service"], "unit_name": ["nginx.service"],
    "process_name": ["firefox"], "pid": ["1234", "1235"], "process_id": ["1234"],
    "java_pid": ["1234"], "job_id": ["42"], "task_id": ["42"], "id": ["42", "43"],
    "database": ["appdb"], "database_name": ["appdb"], "db_name": ["appdb"], "dbname": ["appdb"],
    "table": ["users"], "table_name": ["users"], "query": ["TODO"], "sql": ["SELECT 1"],
    "pattern": ["TODO", "FIXME"], "search_pattern": ["TODO"], "regex": ["TODO"],
    "search_term": ["TODO"], "search_terms": ["TODO"], "search_string": ["TODO"],
    "keyword": ["TODO", "FIXME"], "string": ["hello"], "text": ["hello"], "word": ["hello"],
    "input_text": ["hello"], "replacement": ["DONE"], "expression": ["1+1"], "prompt": ["hello"],
    "code": ["0"], "value": ["true", "false"], "key": ["mykey"], "key_name": ["mykey"],
    "variable": ["EDITOR", "PAGER"], "variable_name": ["EDITOR"], "property": ["color"],
    "n": ["5"], "number": ["10", "20"], "count": ["3"], "integer": ["7"], "amount": ["10"],
    "seconds": ["5"], "minutes": ["5"], "duration": ["10"], "interval": ["5"], "timeout": ["30"],
    "width": ["640"], "height": ["480"], "size": ["1024"], "length": ["16"], "speed": ["100"],
    "level": ["3"], "percentage": ["50"], "priority": ["10"], "year": ["2024"], "month": ["6"],
    "day": ["15"], "line_number": ["10"], "line": ["10"], "column_number": ["2"],
    "pr_number": ["42"], "issue_number": ["42"], "issue_id": ["42"], "timestamp": ["1700000000"],
    "latitude": ["52.52"], "longitude": ["13.40"], "angle": ["90"], "start": ["1"], "end": ["10"],
    "interface": ["eth0", "eth1"], "interface_name": ["eth0"], "network_interface": ["eth0"],
    "wireless_interface": ["wlan0"], "device": ["/dev/sdb"], "device_name": ["sdb"],
    "region": ["us-east-1"], "zone": ["us-east1-b"], "location": ["westeurope"],
    "resource_group": ["my-rg"], "profile": ["default"], "profile_name": ["default"],
    "environment": ["staging"], "environment_name": ["staging"], "platform": ["linux"],
    "type": ["file"], "format": ["json"], "json": ["{}"], "language": ["en"], "lang": ["en"],
    "color": ["red"], "theme_name": ["dark"], "mode": ["fast"],
    "file": ["notes.txt", "README.md"], "filename": ["notes.txt", "README.md"],
    "file_name": ["notes.txt", "README.md"], "input_file": ["notes.txt", "README.md"],
    "input": ["notes.txt"], "source_file": ["src/main.rs"], "configuration_file": ["config/app.toml"],
    "config": ["config/app.toml"], "output_file": ["out/result.txt"], "output": ["out/result.txt"],
    "logfile": ["logs/app.log"], "playbook": ["site.yml"],
    "directory": ["src", "docs"], "dir": ["src", "docs"], "path": ["src", "docs"],
    "source": ["src"], "destination": ["out"], "target": ["build"], "template": ["default"],
    "mountpoint": ["/mnt"], "share": ["public"], "sharename": ["public"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000"], "phone_number": ["+15555550123"],
    "foo": ["foo"], "bar": ["bar"], "a": ["a"], "b": ["b"], "x": ["x"], "y": ["y"],
    "true": ["true"], "all": ["all"], "none": ["none"], "red": ["255"], "green": ["128"],
    "blue": ["0"], "delimiter": [","], "separator": [","], "character": ["x"], "char": ["x"],
    "protocol": ["tcp"], "method": ["GET"], "topic": ["events"], "channel": ["general"],
    "queue_name": ["jobs"], "bucket_name": ["my-bucket"], "vm_name": ["vm1"],
    "volume_name": ["data"], "volume_group": ["vg0"], "vg_name": ["vg0"], "logical_volume": ["lv0"],
    "pool_name": ["tank"], "snapshot_name": ["snap1"], "session_name": ["work"],
    "registry": ["registry.example.com"], "prefix": ["tmp"], "suffix": [".bak"],
    "extension": ["txt"], "ext": ["txt"], "category": ["misc"], "section": ["1"],
    "field_name": ["name"], "field": ["1"], "column": ["1"], "row": ["1"], "index": ["0"],
    "role": ["admin"], "role_name": ["admin"], "provider": ["aws"], "arn": ["arn:aws:iam::123456789012:role/demo"],
    "stack_name": ["demo"], "function_name": ["main"], "function": ["main"], "func_name": ["main"],
    "class_name": ["Main"], "method_name": ["run"], "object": ["obj"], "data": ["hello"],
    "community": ["public"], "printer": ["office"], "model": ["llama3"], "model_name": ["llama3"],
    "os": ["linux"], "arch": ["x86_64"], "architecture": ["x86_64"], "kernel_name": ["linux"],
    "component": ["core"], "component_name": ["core"], "script": ["build"], "test_name": ["smoke"],
    "sink": ["0"], "stream": ["main"], "oid": ["1.3.6.1.2.1.1.1.0"], "context": ["default"],
    "workspace": ["default"], "workspace_name": ["default"], "job_name": ["build"],
    "pipeline_name": ["ci"], "task_name": ["build"], "stringbinding": ["ncacn_ip_tcp:192.168.1.10"],
    "hash_value": ["5d41402abc4b2a76b9719d911017c592"], "filter": ["all"],
    "new_label": ["data"], "label_key": ["app"], "label_value": ["web"], "label_name": ["app"],
    "annotation": ["note"], "entry_name": ["entry"], "bookmark_name": ["main"],
    "speaker": ["default"], "file1": ["notes.txt"], "file2": ["README.md"],
    "channel_name": ["general"], "chat_id": ["42"], "aws_account_id": ["123456789012"],
    "account_name": ["myaccount"], "storage_account_name": ["mystorage"],
    "port_number": ["8080"], "server_name": ["example.com"], "program_name": ["ls"],
    "executable_name": ["ls"], "netmask": ["255.255.255.0"], "netmask_address": ["255.255.255.0"],
    "gw_address": ["192.168.1.1"], "gateway_address": ["192.168.1.1"], "gateway_ip": ["192.168.1.1"],
    "start_time": ["09:00"], "end_time": ["17:00"], "start_date": ["2024-01-01"],
    "end_date": ["2024-01-31"], "date": ["2024-01-15"], "time": ["12:00"],
    "commit_message": ["update-docs"], "script_name": ["build"], "option_name": ["verbose"],
    "address_range": ["192.168.1.0/24"], "target_branch": ["main"], "source_branch": ["feature-x"],
}

SUFFIX_RULES = [
    (r"_name$", None),  # handled specially: my<stem>
    (r"(_id|_uuid|_number|_num|_no)$", "42"),
    (r"(_port)$", "8080"),
    (r"(_host|_hostname|_server|_domain)$", "example.com"),
    (r"(_ip|_address|_addr)$", "192.168.1.10"),
    (r"(_url|_uri|_endpoint)$", "https://example.com"),
    (r"(_file|_filename)$", "notes.txt"),
    (r"(_dir|_directory|_folder|_path)$", "src"),
    (r"(_version)$", "1.2.3"),
    (r"(_user|_username|_owner)$", "alice"),
    (r"(_password|_pass|_passphrase)$", "hunter2"),
    (r"(_key)$", "mykey"),
    (r"(_token|_secret)$", "abc123"),
    (r"(_email)$", "alice@example.com"),
    (r"(_size|_bytes)$", "1024"),
    (r"(_count|_limit|_seconds|_timeout)$", "5"),
    (r"(_pattern|_regex|_query)$", "TODO"),
    (r"(_arn)$", "arn:aws:iam::123456789012:role/demo"),
]

LITERAL_FIXUPS = {
    "/dev/sdX": "/dev/sdb", "/dev/sdXY": "/dev/sdb1", "/dev/sdXN": "/dev/sdb1",
    "/dev/sdXn": "/dev/sdb1", "/dev/sdaX": "/dev/sda1", "/dev/nvmeXnY": "/dev/nvme0n1",
    "/dev/nvmeXnYpZ": "/dev/nvme0n1p1", "/dev/mmcblkX": "/dev/mmcblk0",
    "/dev/ttyXYZ": "/dev/ttyUSB0", "/dev/sgX": "/dev/sg0", "/dev/nstX": "/dev/nst0",
    "/dev/stX": "/dev/st0", "/dev/mdX": "/dev/md0", "/dev/loopX": "/dev/loop0",
    "/dev/vg_name/lv_name": "/dev/vg0/lv0", "/dev/device": "/dev/sdb", "/dev/hidrawX": "/dev/hidraw0",
    "ethX": "eth0", "wlanX": "wlan0", "wlp2s0": "wlp2s0",
    "image:tag": "nginx:latest", "ip:port": "127.0.0.1:8080", "host:port": "localhost:8080",
    "YYYY-MM-DD": "2024-01-15", "mm/dd": "01/15", "hostname|ip": "example.com",
}

# Ecosystem-aware package names, chosen by page name prefix.
PKG_BY_PAGE = [
    (r"^(pip|pip3|pipx|python|uv|poetry|pdm|conda|mamba|micromamba|pyenv|hatch|rye|twine)",
     ["requests", "flask", "numpy"]),
    (r"^(npm|npx|yarn|pnpm|bun|deno|ng|nvm|node|corepack|volta)", ["lodash", "express", "react"]),
    (r"^(cargo|rustup|rustc)", ["serde", "tokio", "anyhow"]),
    (r"^(gem|bundle|bundler|rbenv|rvm)", ["rails", "rake", "rspec"]),
    (r"^(go|gofmt)", ["golang.org/x/tools/gopls", "github.com/spf13/cobra"]),
    (r"^(composer)", ["monolog/monolog", "guzzlehttp/guzzle"]),
    (r"^(snap|flatpak)", ["vlc", "gimp"]),
]

PATH_RE = re.compile(r"(^|[^\w])(path/to|path\\to)([/\\]|$)")
FILELIKE_RE = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9]+)+$")
NUMERIC_RE = re.compile(r"^-?[0-9][0-9.,:x]*$")

used_paths = set()


def variant(values, idx):
    if idx < len(values):
        return values[idx]
    v = values[-1]
    return v + str(idx + 1) if re.fullmatch(r"[a-z]+", v) else v


def ext_of(name):
    if name.lower().endswith(".tar.gz"):
        return "tar.gz"
    m = re.search(r"\.([A-Za-z0-9]+)$", name)
    return m.group(1).lower() if m else None


def file_for_ext(ext, idx):
    if ext in EXT_FILES:
        p = variant(EXT_FILES[ext], idx)
    else:
        p = "fixtures/sample.%s" % ext if idx == 0 else "fixtures/sample2.%s" % ext
    return p


ABS_CONTEXT = [False]  # set by render() when the placeholder follows a lone "/"


def map_path(content, idx):
    """Map a path/to/... placeholder to a concrete path in the tree.

    After a literal "/" (e.g. `dconf read /{{path/to/key}}`) the page means an
    absolute path, which cannot be in the tree: use a common system path instead
    (tmp/... for outputs and directories, etc/hosts for files).
    """
    if ABS_CONTEXT[0]:
        rel = map_path_rel(content, idx)
        base = re.split(r"path[/\\]to[/\\]?", content, maxsplit=1)[-1].lower()
        if "shell" in base:
            return "bin/bash"
        if "log" in base:
            return "var/log/syslog"
        if re.search(r"(^|_)key$", base):
            return "org/gnome/desktop/interface/clock-format"
        if re.search(r"(^|_)object$", base):
            return "org/freedesktop/DBus"
        if ABS_CONTEXT[0] == "dir" or rel == OUT_DIR or rel in SRC_DIR_ALTS \
                or re.search(r"(source|src|dir|directory|folder)$", base):
            return "tmp"
        if rel.startswith(OUT_DIR + "/"):
            return "tmp/" + rel.split("/", 1)[1]
        if re.search(r"(^|_)image$", base):
            return "usr/share/backgrounds/default.png"
        return "etc/hosts"
    p = map_path_rel(content, idx)
    if not p.startswith("/"):
        used_paths.add(p)
    return p


def map_path_rel(content, idx):
    tail = re.split(r"path[/\\]to[/\\]?", content, maxsplit=1)[-1]
    tail = tail.strip("/\\")
    name = re.split(r"[/\\]", tail)[-1] if tail else ""
    base = re.sub(r"\d+$", "", name.split(".")[0].lower()) if name else ""
    m = re.search(r"(\d+)$", name.split(".")[0]) if name else None
    if m:
        idx = max(idx, int(m.group(1)) - 1)
    ext = ext_of(name)
    is_output = bool(OUTPUT_WORDS.search(base)) and not base.startswith("target_directory")
    if not name:
        p = variant(SRC_DIR_ALTS, idx)
    elif ext and not re.fullmatch(r"\d+", ext):
        if is_output:
            p = "%s/%s.%s" % (OUT_DIR, "output" if idx == 0 else "output%d" % (idx + 1), ext)
        else:
            p = file_for_ext(ext, idx)
    elif is_output:
        if re.search(r"(dir|directory|folder|root)$", base):
            p = OUT_DIR
        else:
            p = "%s/%s" % (OUT_DIR, "result" if idx == 0 else "result%d" % (idx + 1))
    elif base in ("file", "input", "input_file", "source", "source_file", "local_file",
                  "old_file", "text_file", "remote_file", "target_file", "file1", "file2",
                  "files", ""):
        p = variant(["src/main.rs", "src/lib.rs", "README.md"], idx) if base != "files" else "src"
    else:
        p = None
        for rx, vals in NOEXT_PATHS:
            if re.search(r"(^|_)" + rx + r"$", base):
                p = variant(vals, idx)
                break
        if p is None:
            p = variant(["src/main.rs", "src/lib.rs", "README.md"], idx) if "file" in base \
                else variant(SRC_DIR_ALTS, idx)
    return p


def map_word(word, idx, page):
    """Map a descriptive snake_case placeholder (without trailing digits)."""
    if word in ("package", "package_name", "packages", "dependency"):
        for rx, vals in PKG_BY_PAGE:
            if re.search(rx, page):
                return variant(vals, idx)
    if word in WORDS:
        return variant(WORDS[word], idx)
    if "_or_" in word:
        return map_word(word.split("_or_")[0], idx, page)
    for rx, val in SUFFIX_RULES:
        if re.search(rx, word):
            if val is None:
                stem = re.sub(r"_name$", "", word)
                v = "my" + stem.split("_")[-1]
                return v if idx == 0 else v + str(idx + 1)
            return val
    parts = word.split("_")
    for i in range(1, len(parts)):
        rest = "_".join(parts[i:])
        if rest in WORDS:
            return variant(WORDS[rest], idx)
    return word


def subst_single(content, idx, page):
    c = content
    if c in LITERAL_FIXUPS:
        return LITERAL_FIXUPS[c]
    if PATH_RE.search(c):
        return map_path(c, idx)
    if c in TREE_NAMES:
        used_paths.add(c)
        return c
    if NUMERIC_RE.match(c):
        return c
    m = re.fullmatch(r"([a-z][a-z_]*?)_?(\d+)?", c)
    if m:
        word, num = m.group(1), m.group(2)
        if num and c not in WORDS:
            if not (word in WORDS or any(re.search(rx, word) for rx, _ in SUFFIX_RULES)):
                return c  # eth0, wlan0, mp3, sha256: a literal value
            idx = max(idx, int(num) - 1)
        elif num:
            word = c
        return map_word(word, idx, page)
    if FILELIKE_RE.match(c):
        ext = ext_of(c)
        if ext in LITERAL_FILE_EXTS:
            # a literal example file name (source.tex, input.gv): keep it; make_tree.sh
            # creates it at the top level unless it is clearly an output file
            if not re.match(r"(output|out|result|new)", c.lower()):
                used_paths.add(c)
            return c
        stem = c.split(".")[0].lower()
        if ext in EXT_FILES and stem in ("file", "input", "output", "source", "input_file",
                                         "output_file", "filename", "script", "archive",
                                         "image", "data", "example"):
            if stem.startswith("output"):
                p = "%s/output.%s" % (OUT_DIR, ext)
            else:
                p = file_for_ext(ext, idx)
            used_paths.add(p)
            return p
    return c  # a literal example value such as example.com, 8.8.8.8, 'Hello World'


def subst(content, page):
    """Return the concrete replacement for one placeholder's content."""
    c = content
    # {{[-a|--all]}} option alternatives -> short form (first alternative)
    if c.startswith("[") and c.endswith("]") and "|" in c:
        return c[1:-1].split("|")[0]
    # lists: {{path/to/file1 path/to/file2 ...}}, {{group1,group2,...}}
    if re.search(r"(^|[ ,;])\.\.\.$", c):
        sep = "," if ("," in c and " " not in c) else " "
        toks = [t for t in re.split(r"[ ,;]+", c) if t and t != "..."]
        return sep.join(subst(t, page) if "|" in t else subst_single(t, i, page)
                        for i, t in enumerate(toks))
    # alternatives without brackets: {{name|id}}, {{on|off}}, {{url|path/to/file}}
    if "|" in c and " | " not in c and not c.startswith("|"):
        first = c.split("|")[0]
        if first:
            return subst_single(first, 0, page)
    return subst_single(c, 0, page)


ESC_OPEN, ESC_CLOSE = "\x01", "\x02"


def render(line, page):
    """Replace placeholders in one example line; returns the concrete command."""
    s = line.replace("\\{\\{", ESC_OPEN).replace("\\}\\}", ESC_CLOSE)
    out = []
    i = 0
    while i < len(s):
        if s.startswith("{{", i):
            # find the matching }} ; inner single braces must balance (stash@{0}}})
            j = i + 2
            depth = 0
            while j < len(s):
                if s[j] == "{":
                    depth += 1
                elif s[j] == "}":
                    if depth == 0 and s.startswith("}}", j):
                        # triple brace: {{...{0}}} -> the outer pair is the last two
                        break
                    depth = max(0, depth - 1)
                j += 1
            if j >= len(s):
                # unbalanced inner braces, e.g. {{{"ID": {"N": "1"\}\}}}: the first
                # unescaped }} closes the placeholder
                j = s.find("}}", i + 2)
                if j < 0:
                    out.append(s[i:])
                    break
            content = s[i + 2:j]
            i = j + 2
            # {{path/to/file}}.apk -> treat the extension as part of the path
            m = re.match(r"\.[A-Za-z][A-Za-z0-9]*\b", s[i:])
            if m and PATH_RE.search(content) and "|" not in content and " " not in content \
                    and not ext_of(content.split("/")[-1]):
                content += m.group(0)
                i += len(m.group(0))
            prev = "".join(out[-2:])
            ABS_CONTEXT[0] = prev.endswith("/") and (len(prev) < 2 or prev[-2] in " \t'\"=:")
            if ABS_CONTEXT[0] and s[i:i + 1] == "/":
                ABS_CONTEXT[0] = "dir"
            rep = subst(content, page)
            ABS_CONTEXT[0] = False
            if prev.endswith("0x") and not re.fullmatch(r"[0-9A-Fa-f]+", rep):
                rep = "8000" if "end" in content else "1000"  # 0x{{start_address}}
            out.append(rep)
        else:
            out.append(s[i])
            i += 1
    return "".join(out).replace(ESC_OPEN, "{{").replace(ESC_CLOSE, "}}")


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir] + list(args), check=True,
                          capture_output=True).stdout


def read_blobs(gitdir, revs):
    """Contents of many blobs through one `git cat-file --batch` process."""
    res = subprocess.run(["git", "--git-dir", gitdir, "cat-file", "--batch"], check=True,
                         input=("\n".join(revs) + "\n").encode(), capture_output=True).stdout
    out, pos = [], 0
    for _ in revs:
        nl = res.index(b"\n", pos)
        header = res[pos:nl].split()
        if len(header) != 3 or header[1] != b"blob":
            raise SystemExit("unexpected cat-file header: %r" % res[pos:nl])
        size = int(header[2])
        out.append(res[nl + 1:nl + 1 + size].decode("utf-8"))
        pos = nl + 1 + size + 1
    return out


def main():
    gitdir = sys.argv[1]
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    commit = git(gitdir, "rev-parse", "HEAD").decode().strip()
    names = git(gitdir, "ls-tree", "-r", "--name-only", "HEAD", "--", "pages/common",
                "pages/linux").decode().split("\n")
    pages = []
    for n in names:
        m = re.fullmatch(r"pages/(common|linux)/([^/]+)\.md", n)
        if m:
            pages.append((m.group(2), PLATFORMS.index(m.group(1)), n))
    pages.sort()
    stats = dict(pages=len(pages), examples=0, unresolved=0, bad_chars=0, duplicates=0,
                 sampled_out=0, kept=0)
    seen = set()
    kept = []
    all_used = set()
    blobs = read_blobs(gitdir, ["HEAD:" + p for _, _, p in pages])
    for (name, _, path), text in zip(pages, blobs):
        prev_desc = False
        for raw in text.split("\n"):
            raw = raw.rstrip("\r")
            if raw.startswith("- "):
                prev_desc = True
                continue
            if not raw.strip():
                continue
            if prev_desc and len(raw) >= 2 and raw.startswith("`") and raw.endswith("`"):
                stats["examples"] += 1
                ex = raw[1:-1]
                used_paths.clear()
                cmd = render(ex, name).strip()
                key = hashlib.sha256(("%s\n%s" % (path[len("pages/"):-3], raw)).encode()).hexdigest()
                if "{{" in cmd:
                    stats["unresolved"] += 1
                elif any(ord(ch) < 0x20 or ord(ch) > 0x7e for ch in cmd):
                    stats["bad_chars"] += 1
                elif cmd in seen:
                    stats["duplicates"] += 1
                elif int(key[:8], 16) >= SAMPLE_THRESHOLD:
                    seen.add(cmd)
                    stats["sampled_out"] += 1
                else:
                    seen.add(cmd)
                    kept.append(cmd)
                    all_used.update(used_paths)
            prev_desc = False
    stats["kept"] = len(kept)
    with open(os.path.join(outdir, "commands.txt"), "w", encoding="ascii", newline="\n") as f:
        for c in kept:
            f.write(c + "\n")
    print("tldr commit:", commit, file=sys.stderr)
    for k, v in stats.items():
        print("%-12s %d" % (k, v), file=sys.stderr)
    with open(os.path.join(outdir, "paths_used.txt"), "w") as f:
        f.write("\n".join(sorted(all_used)) + "\n")


if __name__ == "__main__":
    main()
