"""The TLS certificates of the webhook and of the scheduler's agent endpoint, in one home.

- `issue`: a CA and the serving certificates it signs, as pure functions of their arguments
  (the clock included).
- `command`: `caldera certs`, which keeps them in Secrets and fills in the webhooks' caBundle
  with `issue`'s results; it decides nothing about certificates itself.
"""
