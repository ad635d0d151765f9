"""The sans-IO forwarding core: tables and pipelines, no trio, no sockets."""

from icnd.core.fw.forwarder import Forwarder, Send

__all__ = ["Forwarder", "Send"]
