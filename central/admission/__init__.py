"""Admission for Volcano Jobs, Queues, PodGroups and the scheduler's pods as pure functions:
defaulting, then validation.

Used by the HTTPS admission webhook, `caldera validate` and the simulator alike, so a bad
object is refused the same way everywhere. Every problem comes back, each as
"<field.path>: <message>" (e.g. `spec.tasks[1].name: duplicated task name found: "worker" (also spec.tasks[0])`).

    review.admit(obj, cluster, config, old=None, user=None) -> Review(allowed, errors, object)
                                                       never raises: a malformed object is a denial
    review.admit_delete(obj, cluster, config) -> Review
    review.json_patch(before, after) -> list[dict]     the mutating webhook's patch
    cluster.Cluster.from_objects(objects)              queues / PodGroups / namespaces to decide against
    config.AdmissionConfig                             operator limits (max tasks / replicas, queue depth),
                                                       the scheduler's name and identity

Per kind: jobs.mutate_job / validate_job, queues.mutate_queue / validate_queue /
validate_queue_delete, podgroups.mutate_podgroup / validate_podgroup, pods.validate_pod.
Each also runs the scheduler's own parser (central.model.parse) and the checks of the
annotations plugins and the agent interpret (central.model.annotations), so whatever is
admitted, the scheduler and the agent can read.
"""

from central.admission.cluster import Cluster
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.review import Review, admit, admit_delete, json_patch

__all__ = ["AdmissionConfig", "Cluster", "DEFAULT_CONFIG", "Review", "admit", "admit_delete", "json_patch"]
