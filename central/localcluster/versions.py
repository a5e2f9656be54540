"""Pinned versions of the Go-built parts: the one place to change them.

kube-apiserver, kube-controller-manager and kube-scheduler come from the `k8s.io/kubernetes`
module at KUBERNETES; its staging modules (k8s.io/api, k8s.io/client-go, ...) are pinned to the
matching v0.MINOR.PATCH; etcd is built at the version the kubernetes module requires, so the
two always agree. The newest release that builds with this machine's Go (1.26).
"""

KUBERNETES = "v1.37.2"
HELM = "v3.22.0"
GO_MIN = (1, 26)


def staging_version(kubernetes: str = KUBERNETES) -> str:
    """v1.37.2 -> v0.37.2: the tag of every staging module released with it."""
    major, minor, patch = kubernetes.lstrip("v").split(".")
    return f"v0.{minor}.{patch}"

# The commit of Volcano's public repository (github.com/volcano-sh/volcano) whose e2e suites,
# vcctl and components `caldera conformance` builds and runs; its go.mod pins its own modules.
VOLCANO = "ed72c7c815a9fd547a787134676f73d42e9d049c"
