from tests.kube.conftest import api, kube, kubeconfig  # noqa: F401  (the API stand-in fixtures)
