"""Target parsing (``[user@]host[:port]``, IPv6) and resolution through an OpenSSH client config
file.

The config tests run twice: through OpenSSH's own ``ssh -G`` (where ``ssh`` is installed) and
through the fallback parser used where it is not; both must read the same file the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from core.probes.transport import ssh_config as ssh_config_module
from core.probes.transport.target import SshTarget, parse_target, split_target


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu-box", (None, "gpu-box", None)),
        ("ubuntu@10.0.0.5", ("ubuntu", "10.0.0.5", None)),
        ("ubuntu@10.0.0.5:2222", ("ubuntu", "10.0.0.5", 2222)),
        ("  node1.example.com:22  ", (None, "node1.example.com", 22)),
        ("[::1]:2222", (None, "::1", 2222)),
        ("root@[2001:db8::7]", ("root", "2001:db8::7", None)),
        ("::1", (None, "::1", None)),
        ("fe80::1%eth0", (None, "fe80::1%eth0", None)),
        # the last @ splits, as in ssh
        ("alice@corp.example@bastion", ("alice@corp.example", "bastion", None)),
        ("h:65535", (None, "h", 65535)),
    ],
)
def test_split_target_accepts_the_usual_forms(
    text: str, expected: tuple[str | None, str, int | None]
) -> None:
    assert split_target(text) == expected


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "target is empty"),
        ("   ", "target is empty"),
        ("h:0", "port '0'"),
        ("h:65536", "port '65536'"),
        ("h:ssh", "port 'ssh'"),
        ("h:", "port ''"),
        ("h:-1", "port '-1'"),
        ("[::1", "without closing ']'"),
        ("[::1]2222", "where ':port' was expected"),
        ("[]:22", "host ''"),
        ("bad host", "host 'bad host'"),
        ("box;rm -rf ~", "host 'box;rm -rf ~'"),
        ("-oProxyCommand=evil", "host '-oProxyCommand=evil'"),
        ("user@", "host ''"),
        ("@host", "user name ''"),
        ("us er@host", "user name 'us er'"),
    ],
)
def test_split_target_rejects_malformed_input_in_one_sentence(text: str, needle: str) -> None:
    with pytest.raises(ValueError) as caught:
        split_target(text)
    message = str(caught.value)
    assert needle in message
    assert "\n" not in message


@pytest.mark.parametrize("text", ["root@host\n:22", "root\n@host", "host\t:22", "ho\x00st"])
def test_a_target_with_a_newline_or_other_control_character_is_refused_in_one_sentence(
    text: str,
) -> None:
    with pytest.raises(ValueError) as caught:
        parse_target(text, use_ssh_config=False)
    message = str(caught.value)
    assert "control character" in message and repr(text.strip())[1:-1] in message
    assert message.isprintable()


@given(st.from_regex(r"\A[a-z]{1,8}@[a-z]{1,8}(:[0-9]{1,4})?\Z"), st.data())
def test_a_control_character_anywhere_in_a_valid_target_is_refused(
    text: str, data: st.DataObject
) -> None:
    at = data.draw(st.integers(1, len(text) - 1))
    control = data.draw(st.characters(categories=["Cc"]))
    spoilt = text[:at] + control + text[at:]
    with pytest.raises(ValueError, match="control character"):
        split_target(spoilt)


def test_non_text_is_refused() -> None:
    with pytest.raises(ValueError, match="target must be text"):
        split_target(None)  # type: ignore[arg-type]


@given(st.text(max_size=40))
def test_parser_never_crashes_on_garbage(text: str) -> None:
    try:
        target = parse_target(text, use_ssh_config=False)
    except ValueError:
        return
    assert 1 <= target.port <= 65535 and target.host


def test_description_brackets_ipv6() -> None:
    assert parse_target("[::1]:2222", use_ssh_config=False).description == "[::1]:2222"
    assert parse_target("bob@10.0.0.5", use_ssh_config=False).description == "bob@10.0.0.5:22"


def test_port_is_validated_on_the_model() -> None:
    with pytest.raises(ValidationError):
        SshTarget(host="h", port=0)


CONFIG = """\
# rented boxes
Host gpu1
  HostName 10.0.0.5
  User ubuntu
  Port 2200
  IdentityFile ~/.ssh/gpu_key
  IdentityFile /keys/second
  ProxyJump ops@bastion.example.com:2022

Host viaproxy
  HostName 192.168.1.9
  ProxyCommand nc -X connect -x proxy:3128 %h %p
  IdentitiesOnly yes

Host direct
  ProxyCommand none
  ProxyJump none

Host *
  User fallback
"""


@pytest.fixture(params=["ssh -G", "fallback parser"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which reader resolves the config: OpenSSH (skipped where ``ssh`` is missing) or the fallback
    parser."""
    if request.param == "ssh -G" and ssh_config_module.ssh_client() is None:
        pytest.skip("the OpenSSH client is not installed (apt-get install openssh-client)")
    if request.param == "fallback parser":
        monkeypatch.setattr(ssh_config_module, "ssh_client", lambda: None)
    return str(request.param)


@pytest.fixture
def ssh_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resolver: str) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "config"
    path.write_text(CONFIG)
    return path


def test_alias_resolves_through_the_config(ssh_config: Path, tmp_path: Path) -> None:
    target = parse_target("gpu1", ssh_config=ssh_config)
    assert target.host == "10.0.0.5"
    assert target.port == 2200
    assert target.user == "ubuntu"
    assert target.identity_files == [str(tmp_path / "home" / ".ssh" / "gpu_key"), "/keys/second"]
    assert target.proxy_jump == "ops@bastion.example.com:2022"
    assert target.proxy_command is None
    assert target.alias == "gpu1"
    assert target.description == "ubuntu@10.0.0.5:2200"


def test_typed_user_and_port_win_over_the_config(ssh_config: Path) -> None:
    target = parse_target("root@gpu1:22", ssh_config=ssh_config)
    assert (target.user, target.port, target.host) == ("root", 22, "10.0.0.5")


def test_proxy_command_tokens_use_the_typed_port(ssh_config: Path) -> None:
    target = parse_target("viaproxy:2222", ssh_config=ssh_config)
    assert target.proxy_command == "nc -X connect -x proxy:3128 192.168.1.9 2222"
    assert target.identities_only is True
    assert parse_target("viaproxy", ssh_config=ssh_config).proxy_command == (
        "nc -X connect -x proxy:3128 192.168.1.9 22"
    )


def test_none_disables_proxies_and_wildcards_apply(ssh_config: Path) -> None:
    target = parse_target("direct", ssh_config=ssh_config)
    assert (target.proxy_command, target.proxy_jump, target.alias) == (None, None, None)
    assert target.user == "fallback"  # from "Host *"


def test_unknown_host_keeps_what_was_typed(ssh_config: Path) -> None:
    target = parse_target("[::1]:2222", ssh_config=ssh_config)
    assert (target.host, target.port, target.alias, target.identity_files) == (
        "::1",
        2222,
        None,
        [],
    )


def test_bad_port_in_config_is_named(tmp_path: Path, resolver: str) -> None:
    path = tmp_path / "config"
    path.write_text("Host badport\n  Port twentytwo\n")
    said = "Bad port 'twentytwo'" if resolver == "ssh -G" else "Port 'twentytwo' for host 'badport'"
    with pytest.raises(ValueError, match=said):
        parse_target("badport", ssh_config=path)
    if resolver == "fallback parser":  # OpenSSH refuses the whole file, a typed port or not
        assert parse_target("badport:2022", ssh_config=path).port == 2022


def test_an_alias_from_an_included_file_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resolver: str
) -> None:
    """paramiko's parser ignores ``Include``: the alias used to connect to the bare name "gpu7"."""
    home = tmp_path / "home"
    (home / ".ssh" / "conf.d").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (home / ".ssh" / "conf.d" / "rented").write_text(
        "Host gpu7\n  HostName 10.1.2.3\n  User ubuntu\n  Port 2207\n"
    )
    config = home / ".ssh" / "config"
    config.write_text("Include conf.d/*\n\nHost *\n  User fallback\n")
    target = parse_target("gpu7", ssh_config=config)
    assert (target.host, target.user, target.port, target.alias) == (
        "10.1.2.3",
        "ubuntu",
        2207,
        "gpu7",
    )


def test_missing_config_and_disabled_lookup(ssh_config: Path, tmp_path: Path) -> None:
    assert parse_target("gpu1", ssh_config=tmp_path / "absent").host == "gpu1"
    assert parse_target("gpu1", ssh_config=ssh_config, use_ssh_config=False).host == "gpu1"


def test_unparsable_config_is_a_clear_error(tmp_path: Path, resolver: str) -> None:
    path = tmp_path / "config"
    path.write_text("Host x\n  Port\n")
    with pytest.raises(ValueError, match="could not be read for host 'x'"):
        parse_target("x", ssh_config=path)
