"""Reading a container's command as a shell runs it: the shapes Volcano's e2e specs write."""

import pytest

from central.model.commandrun import Run, container_run


def sh(script: str) -> dict:
    """A container as Volcano's e2e helper writes one: `/bin/sh -c SCRIPT`."""
    return {"name": "c", "command": ["/bin/sh"], "args": ["-c", script]}


@pytest.mark.parametrize("container, run", [
    pytest.param(sh("sleep 5"), Run(5.0, 0), id="sleep"),
    pytest.param(sh("sleep 10s"), Run(10.0, 0), id="sleep-seconds-suffix"),
    pytest.param(sh("sleep 10s && exit 3"), Run(10.0, 3), id="sleep-and-exit"),
    pytest.param(sh("sleep 1; exit 1"), Run(1.0, 1), id="sleep-then-exit"),
    pytest.param(sh("exit 1"), Run(0.0, 1), id="exit"),
    pytest.param(sh("exit 256"), Run(0.0, 0), id="exit-code-wraps"),
    pytest.param(sh("trap '' TERM; sleep 999999"), Run(999999.0, 0), id="trap-then-sleep"),
    pytest.param(sh("echo 'started'; sleep 2 && false"), Run(2.0, 1), id="echo-sleep-false"),
    pytest.param(sh("sleep 1m 30"), Run(90.0, 0), id="sleep-sums-its-arguments"),
    pytest.param(sh("sleep 3 &&\nexit 2"), Run(3.0, 2), id="and-at-end-of-line"),
    pytest.param(sh("sleep 2\nexit 4\nsleep 100"), Run(2.0, 4), id="lines-stop-at-exit"),
    pytest.param(sh("false || exit 7"), Run(0.0, 7), id="or-runs-on-failure"),
    pytest.param(sh("true || xyz"), Run(0.0, 0), id="skipped-branch-never-read"),
    pytest.param(sh("false && sleep 100"), Run(0.0, 1), id="and-skips-on-failure"),
    pytest.param(sh("false; exit"), Run(0.0, 1), id="bare-exit-keeps-status"),
    pytest.param(sh("mkdir -p /tmp/x; echo hi > /tmp/x/f; sleep 1"), Run(1.0, 0), id="setup-and-redirect"),
    pytest.param(sh("A=1 B=2 sleep 3"), Run(3.0, 0), id="assignments"),
    pytest.param(sh("exec sleep 4"), Run(4.0, 0), id="exec"),
    pytest.param({"name": "c", "command": ["sh", "-c", "sleep 10"]}, Run(10.0, 0), id="sh-c-in-command"),
    pytest.param({"name": "c", "command": ["sleep", "3600"]}, Run(3600.0, 0), id="sleep-argv"),
    pytest.param({"name": "c", "command": ["/bin/true"]}, Run(0.0, 0), id="true"),
    pytest.param({"name": "c", "command": ["false"]}, Run(0.0, 1), id="false"),
    pytest.param({"name": "c", "command": ["env"]}, Run(0.0, 0), id="env"),
    pytest.param({"name": "c", "command": ["sleep"], "args": ["infinity"]}, Run(None), id="sleep-infinity"),
    pytest.param(sh("sleep infinity; exit 3"), Run(None), id="nothing-after-sleep-infinity"),
    pytest.param({"name": "c", "command": ["tail", "-f", "/dev/null"]}, Run(None), id="tail-f"),
    pytest.param(sh("tail -f /dev/null"), Run(None), id="sh-tail-f"),
])
def test_understood_commands(container: dict, run: Run) -> None:
    assert container_run(container) == run


@pytest.mark.parametrize("container", [
    pytest.param({"name": "c", "image": "nginx"}, id="no-command"),
    pytest.param(sh("sleep 10s && xyz"), id="unknown-program-reached"),
    pytest.param(sh("python3 /opt/pytorch-mnist/mnist.py --epochs=1"), id="a-real-program"),
    pytest.param(sh("mkdir -p /var/run/sshd; /usr/sbin/sshd -D;"), id="a-daemon"),
    pytest.param({"name": "c", "command": ["/bin/sh"], "args": ["fake.sh"]}, id="a-script-file"),
    pytest.param(sh("sleep 3 | cat"), id="pipe"),
    pytest.param(sh("sleep 3 &"), id="background"),
    pytest.param(sh("echo $(date); exit 1"), id="command-substitution"),
    pytest.param(sh("sleep soon"), id="sleep-word"),
    pytest.param(sh("sleep"), id="sleep-without-duration"),
    pytest.param(sh("exit $CODE"), id="exit-variable"),
    pytest.param(sh("echo 'unclosed"), id="unclosed-quote"),
])
def test_commands_not_understood_give_none(container: dict) -> None:
    assert container_run(container) is None


BUSYBOX, NGINX = "busybox", "nginx:1.29.3-alpine"  # the images of Volcano's e2e specs


def in_image(image: str, container: dict) -> dict:
    return {**container, "image": image}


@pytest.mark.parametrize("container, run", [
    pytest.param(in_image(NGINX, sh("sleep 10s && xyz")), Run(10.0, 127), id="program-not-found-after-sleep"),
    pytest.param(in_image(BUSYBOX, sh("sh fake.sh")), Run(0.0, 127), id="script-file-not-found"),
    pytest.param(in_image(BUSYBOX, {"name": "c", "command": ["/bin/sh"], "args": ["fake.sh"]}), Run(0.0, 127),
                 id="shell-given-a-missing-file"),
    pytest.param(in_image(BUSYBOX, sh("xyz || exit 3")), Run(0.0, 3), id="not-found-is-a-failure"),
    pytest.param(in_image(BUSYBOX, sh("/opt/app/run; sleep 2")), Run(2.0, 0), id="the-script-goes-on"),
    pytest.param(in_image(BUSYBOX, {"name": "c", "command": ["train"]}), Run(0.0, 128), id="exec-of-a-missing-program"),
    pytest.param(in_image("docker.io/library/busybox:1.36", sh("sh -c 'sleep 1; exit 2'")), Run(1.0, 2),
                 id="nested-shell"),
    pytest.param(in_image(BUSYBOX, sh("sleep 1; sh -c 'sleep infinity'")), Run(None), id="nested-shell-never-ends"),
])
def test_known_images_fail_what_they_do_not_have(container: dict, run: Run) -> None:
    assert container_run(container) == run


@pytest.mark.parametrize("container", [
    pytest.param(in_image(BUSYBOX, sh("wget http://x/; sleep 1")), id="an-applet-not-modelled"),
    pytest.param(in_image(NGINX, sh("nginx -g 'daemon off;'")), id="the-images-own-program"),
    pytest.param(in_image(NGINX, sh("sh /docker-entrypoint.sh nginx")), id="the-images-own-script"),
    pytest.param(in_image("nginx", sh("sleep 1 && xyz")), id="debian-nginx-is-not-known"),
    pytest.param(in_image("python:3.12-alpine", sh("python3 -V")), id="other-alpine-images-are-not-known"),
])
def test_what_a_known_image_has_or_an_unknown_image_runs_is_not_understood(container: dict) -> None:
    assert container_run(container) is None
