"""The sans-IO forwarding core: tables and pipelines, no trio, no sockets."""

from .forwarder import Forwarder, Send

__all__ = ["Forwarder", "Send"]
