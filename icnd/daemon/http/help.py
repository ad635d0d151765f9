"""What each figure of ``/metrics`` counts: the HELP line of every status counter, table and face counter.

One table, `HELP`, keyed as `icnd.daemon.http.metrics.metric_name` is given
the key: a key of ``counters`` or ``tables`` in ``status/get`` (``icnd status
--json``; the routing counters as ``routing_<counter>``, the handler errors
as ``handler_errors_<component>``), or ``face_<counter>`` for a counter of
``face/list``.  The texts come from the documents that explain the figures
(docs/management.md#status-counters and the pages it links to) and from the
code that counts them.  A key added to the status report needs its line
here: ``tests/daemon/test_http_metrics_help.py`` reads the keys of a running
node and fails for one without it.
"""

from __future__ import annotations

__all__ = ["HELP", "MISSING", "describe"]

# A key without a line in HELP (a figure added without one) still scrapes, with this text; the test above
# fails for it, so that no figure ships with it.
MISSING = "not described yet (see docs/management.md#status-counters)"

HELP: dict[str, str] = {
    # --- the forwarder (icnd.core.fw.forwarder) ---
    "interests_in": "Interests received, on every face",
    "interests_out": "Interests forwarded (to next hops; reflexive ones to their consumers)",
    "data_in": "Data packets received, on every face",
    "data_out": "Data packets sent downstream (from the Content Store or forwarded)",
    "nacks_in": "Nacks received from upstream",
    "nacks_out": "Nacks sent downstream",
    "cs_hits": "Interests answered from the Content Store",
    "cs_misses": "Interests the Content Store could not answer",
    "cs_inserts": "Data packets stored in the Content Store",
    "cs_evicted_unverified": "Data evicted from the Content Store because a local consumer found it "
                             "unverifiable (cs/evict)",
    "unsolicited_data": "Data received that no pending Interest sent to that face asked for (dropped)",
    "unsolicited_nacks": "Nacks received that match no pending Interest sent to that face (dropped)",
    "decode_errors": "packets received that did not decode (dropped)",
    "pit_aggregated": "Interests from a new downstream joined to a pending Interest for the same Data",
    "pit_expired": "pending Interests that expired unanswered",
    "pit_satisfied": "pending Interests satisfied by Data",
    "pit_full": "Interests Nacked congestion: the PIT's entries, or a face's pending Interests, at their bound",
    "pit_local_reserve": "Interests from non-local faces Nacked congestion: only the PIT's reserve for "
                         "local faces was left",
    "pit_fair_share": "Interests Nacked congestion: the non-local face asking held its fair share of the PIT",
    "pit_bytes_full": "Interests Nacked congestion: the PIT's bound on Interest parameter bytes "
                      "(in all, or of one face)",
    "duplicate_nonces": "Interests Nacked duplicate: their nonce is pending already (a loop)",
    "dead_nonce_hits": "Interests Nacked duplicate: their nonce is in the dead-nonce list (a loop)",
    "retx_suppressed": "retransmitted Interests not forwarded again (within the suppression interval)",
    "retransmissions": "retransmitted Interests forwarded again",
    "hop_limit_drops": "Interests dropped with a hop limit of 0",
    "scope_violations": "/localhost packets from non-local faces, refused",
    "no_route": "pending Interests Nacked no-route: no usable next hop",
    "unknown_face_drops": "packets dropped because their face is not (or no longer) in the face table",
    "mgmt_commands": "management commands handled (/localhost/icnd/...)",
    "rib_refused": "routes refused at the RIB's or FIB's bounds (route/add answered 409)",
    # --- reflexive forwarding (icnd.core.tables.reflexive) ---
    "rf_entries_created": "reflexive-forwarding entries created (a trigger Interest forwarded)",
    "rf_miss": "reflexive Interests Nacked no-route: no live reflexive entry for their prefix",
    "rf_wrong_ingress": "reflexive Interests dropped: arrived on a face their trigger Interest did not go out on",
    "rf_prohibited": "reflexive Interests Nacked no-route: their consumer had prohibited more",
    "rf_killed": "reflexive entries a consumer's Nack prohibited closed to further reflexive Interests",
    "rf_extended": "trigger Interests kept alive longer by a reflexive Interest",
    "rf_collisions": "trigger Interests Nacked prohibited: their reflexive prefix is another trigger's",
    "rf_full": "trigger Interests Nacked no-resources: the reflexive table, or a face's share, was full",
    "rf_ri_limit": "reflexive Interests Nacked prohibited: too many for one trigger Interest",
    "rnp_malformed": "Interests Nacked malformed for a misplaced or malformed reflexive name component",
    # --- in-network aggregation (docs/reduction.md#counters-and-tables) ---
    "agg_requests": "reduction requests from downstream handled by the aggregator",
    "agg_forwarded": "whole-group reduction requests forwarded toward the rendezvous",
    "agg_relayed": "reduction sub-requests relayed unchanged",
    "agg_entries": "aggregation-table entries created",
    "agg_roots": "aggregation entries for whole-group requests (this node was the rendezvous)",
    "agg_children": "aggregation child requests made (sub-requests and local contribution Interests)",
    "agg_child_data": "Data answers from aggregation children",
    "agg_combined": "aggregation answers added into an existing accumulator",
    "agg_results": "complete aggregates produced (at any level)",
    "agg_partials": "partial aggregates produced",
    "agg_incomplete": "reduction not-yet Nacks produced",
    "agg_errors": "reduction ERROR answers produced",
    "agg_retransmissions": "aggregation child requests re-sent",
    "agg_held": "aggregation child requests not re-sent on their timeout: the next hop is a reliable (stream) face",
    "agg_reconnect_resends": "aggregation child requests re-sent because their stream face reconnected",
    "agg_stall_resends": "aggregation child requests re-sent because their stream next hop answered nothing for 2 s",
    "agg_retx_suppressed": "re-sent consumer requests kept at the first reliable hop that already carried them",
    "agg_pushed": "contributions local applications pushed with their requests for the aggregate, stored",
    "agg_push_duplicates": "pushed contributions the node already held (a re-sent request, or given both ways)",
    "agg_push_refused": "pushed requests refused: not from a local application, or the contribution was refused",
    "agg_pushed_up": "partial sums neighbour nodes pushed up to this node with their requests",
    "agg_push_late": "pushed contributions or partial sums that came after this node stopped waiting for them",
    "agg_congestion": "reduction requests refused by the aggregator's admission",
    "agg_malformed": "reduction requests Nacked malformed",
    "agg_rejected": "aggregation child answers rejected (malformed segment, contributors outside the subset)",
    "agg_duplicates": "aggregation child answers whose contributors were already counted",
    "agg_late": "aggregation child answers arriving after their entry finished",
    "agg_paced": "reduction sub-requests that waited for room in their next hop's window",
    "agg_round_share": "new reduction rounds refused: the non-local face asking has started its share "
                       "of the group's rounds (aggregate_face_max_rounds)",
    "agg_round_reserve": "new reduction rounds refused: only the rounds kept for local requesters are left",
    "agg_internal_errors": "aggregator inbox items that failed on a bug (logged; forwarding goes on)",
    # --- the contribution store and the group table (docs/reduction.md#counters-and-tables) ---
    "contrib_rounds": "contribution rounds stored (a member's first segment of a round)",
    "contrib_segments": "contribution segments stored",
    "contrib_refused": "contributions refused (malformed, not a member's, conflicting bytes, round gone, "
                       "store full, ...)",
    "contrib_served": "contribution Interests answered from the store (at once, or held until the member "
                      "contributed)",
    "contrib_held": "contribution Interests held until the member contributes",
    "contrib_evicted": "contribution rounds evicted",
    "contrib_refused_window": "new contribution rounds refused because no kept round may give way to them",
    "contrib_remote_displaced": "remote-only contribution rounds replaced by the member's own conflicting "
                                "contribution",
    "contrib_refused_untrusted": "contributions handed over by other nodes that the trust schema refused "
                                 "(also in contrib_refused)",
    "contrib_shm": "contributions handed over in shared memory and stored whole",
    "result_shm_fetches": "aggregates and collective values this node fetched and verified once for its local ranks "
                          "(reduce/fetch-shm, collective/part-shm)",
    "result_shm_handovers": "aggregates and values handed to local ranks in a sealed memory file",
    "result_shm_refused": "reduce/fetch-shm and collective/part-shm requests refused (bad arguments, no descriptor "
                          "passing, over the bound, an incomplete or failed aggregate, a part not there)",
    "contrib_shm_refused": "shared-memory contribution hand-overs refused",
    "groups_refused_full": "group announcements (or local creates) refused: the group table is full",
    "groups_refused_source": "group announcements refused: the announcing key's quota (groups_per_source)",
    "groups_expired": "announced groups forgotten after groups_remote_idle_s unused",
    "groups_evicted_for_local": "announced groups evicted to make room for a local group create",
    "groups_refused_untrusted": "group announcements the trust schema refused (signer not certified, "
                                "or not allowed)",
    # --- published objects (docs/reduction.md#the-data-path-end-to-end) ---
    "object_shm_reads": "objects handed to local clients in shared memory, without crossing the socket",
    "object_shm_appends": "object uploads received in shared memory",
    "object_shm_refused": "shared-memory object uploads refused",
    # --- the function host (docs/functions.md#counters-and-tables) ---
    "fn_calls": "function triggers and pure calls that reached the node's function host",
    "fn_busy": "function calls Nacked no-resources (at function_max_jobs)",
    "fn_signed_calls": "small function calls proven by an Ed25519 signature",
    "fn_session_calls": "small function calls naming one of the host's sessions (valid MAC or not)",
    "fn_sessions_granted": "function-call sessions granted (signed small calls that offered a key)",
    "fn_session_unknown": "small function calls naming none of the host's sessions (session-unknown)",
    "fn_unauthorized": "function calls refused: invalid proof or MAC, stale timestamp, or the policy",
    "fn_bad_calls": "malformed function calls: unknown function, wrong name shape, bad parameters or arguments",
    "fn_executions": "times a hosted function actually ran",
    "fn_memo_evictions": "pure function results dropped from the memo, or too large to keep",
    "fn_refs_fetched": "named arguments (icnd.Ref, icnd.Future) the function host fetched for calls",
    "fn_refs_refused": "named arguments the host's validator refused (the call answered bad-ref)",
    "fn_reports": "load reports of functions local applications host (function/report)",
    "fn_reports_refused": "function/report commands refused",
    # --- signing for keyless applications (signing/add) ---
    "app_data_signed": "Data the node signed for keyless local applications",
    "signing_refused": "signing/add and signing/remove requests refused",
    # --- the listeners (docs/configuration.md) ---
    "connections_refused_listener": "connections closed at once: a listener's max connections reached",
    "connections_refused_source": "TCP connections closed at once: one remote address's stream_max_per_source "
                                  "reached",
    "frame_timeouts": "stream faces closed because a partial frame did not complete within "
                      "stream_frame_timeout_s",
    "udp_faces_refused": "datagrams from a new UDP peer dropped: on-demand faces full, none idle",
    "udp_faces_evicted": "idle on-demand UDP faces closed to make room for a new peer",
    "reassembly_budget_evictions": "partial fragmented packets dropped to keep a UDP listener's reassembly budget",
    # --- configuration reloads (SIGHUP) ---
    "config_reloads": "configuration reloads applied (SIGHUP)",
    "config_reload_errors": "configuration reloads refused: the file did not load, nothing changed",
    # --- the handler boundary (icnd.daemon.containment) ---
    "handler_errors": "exceptions caught while handling a packet or timer (a bug: the packet was dropped; "
                      "sum of the handler_errors_* counters)",
    "handler_errors_forwarder": "exceptions caught while forwarding a received packet (a bug: packet dropped)",
    "handler_errors_routing": "exceptions caught while handling a routing message (a bug: message dropped)",
    "handler_errors_management": "exceptions caught while handling a management command (a bug)",
    "handler_errors_timers": "exceptions caught in a pass of the forwarder's timers (a bug)",
    "handler_errors_routing_timers": "exceptions caught in a pass of the routing timers or a face "
                                     "going up or down (a bug)",
    # --- the status page (--http) ---
    "http_requests": "HTTP requests answered by the status server",
    "http_refused": "HTTP requests refused: 405 not GET or HEAD, 404 unknown path, 503 busy",
    "http_truncated": "status pages that left rows out, and scrapes that summed faces into face=\"other\"",
    "http_errors": "HTTP requests answered 500: a bug while building a page (logged)",
    # --- link-state routing: the router (icnd.core.routing.router; docs/routing.md) ---
    "routing_hellos_out": "routing hello Interests sent (each with a fresh challenge)",
    "routing_hellos_in": "routing hello Interests received",
    "routing_hellos_refused": "routing hello answers refused: no valid proof of the challenge, or a name "
                              "held by another key",
    "routing_hellos_unsolicited": "routing hello answers that answer no challenge this node has pending",
    "routing_proofs_out": "routing hello Interests answered with a signed proof",
    "routing_proofs_refused": "routing hellos from faces that are no neighbour's left unanswered "
                              "(proof budget spent)",
    "routing_syncs_out": "routing sync Interests sent (notifications of new records)",
    "routing_syncs_in": "routing sync Interests received",
    "routing_fetches_out": "routing fetch Interests sent (for records notified and wanted)",
    "routing_fetches_in": "routing fetch Interests received (each answered)",
    "routing_records_in": "link-state records received in fetch answers",
    "routing_records_stored": "link-state records stored (received, and this node's own)",
    "routing_records_stale": "link-state records dropped: not newer than the version held",
    "routing_records_malformed": "link-state records refused: they did not decode",
    "routing_records_refused": "link-state records the validator refused (see last_refusal)",
    "routing_records_over_bounds": "link-state records refused: over the bounds of size, adjacencies "
                                   "or prefixes",
    "routing_records_no_room": "link-state records refused: the link-state database is full",
    "routing_records_expired": "link-state records dropped for not being refreshed within their lifetime",
    "routing_records_replayed": "link-state records refused: the replay of a record that expired here",
    "routing_records_wrong_key": "link-state records refused: signed by another key than the origin's "
                                 "established one",
    "routing_records_origin_cap": "link-state records refused: the neighbour already introduced "
                                  "max_origins_per_neighbor origins",
    "routing_own_name_claimed": "link-state records of this node's own name not signed by its key, refused",
    "routing_own_version_raised": "records of this node's previous life (its own key) that raised its "
                                  "record version",
    "routing_keys_replaced": "orphaned node names whose established key gave way to a new one",
    "routing_replies_over_bounds": "routing fetch answers refused for their size",
    "routing_originated": "versions of this node's own link-state record originated",
    "routing_route_computations": "full route computations (after a change of the graph)",
    "routing_route_updates_light": "light route updates (announcements changed, no Dijkstra)",
    "routing_routes_over_limit": "prefixes left unrouted: routing already routes max_routes prefixes",
    "routing_messages_malformed": "routing messages dropped: they did not decode, or a field was out of shape",
    "routing_messages_rate_limited": "routing Interests dropped over a face's budget (400 per second)",
    "routing_messages_not_neighbor": "routing syncs dropped: not from a neighbour's face nor a proven alias",
    "routing_bytes_out": "bytes of routing messages sent",
    "routing_messages_out": "routing messages sent (hellos, proofs, syncs, fetches and their answers)",
    # --- link-state routing: the node's shell (icnd.daemon.routing) ---
    "routing_announcements_dropped": "prefixes left out of this node's announcements over routing "
                                     "max_prefixes (counted each time they are made)",
    "routing_announcements_refused": "announce commands refused: over routing max_prefixes",
    "routing_routes_refused": "routes computed by routing that the RIB refused (full or invalid)",
    "routing_send_failures": "routing messages not sent: their face was gone or refused them",
    # --- tables (status/get's tables) ---
    "pit_entries": "pending Interest table entries",
    "fib_entries": "FIB entries (prefixes with next hops)",
    "rib_routes": "routes in the RIB (prefix, face and origin)",
    "cs_entries": "Data packets in the Content Store",
    "cs_bytes": "bytes of Data in the Content Store",
    "faces": "faces in the face table (permanent faces waiting for their peer included)",
    "rf_entries": "reflexive-forwarding entries",
    "agg_entries_live": "aggregations in progress",
    "agg_children_live": "aggregation child requests outstanding",
    "agg_bytes": "bytes held in aggregation accumulators",
    "dead_nonces": "entries in the dead-nonce list (loop detection)",
    "repo_entries": "Data packets published through this node (repo/publish), kept until unpublished",
    "repo_bytes": "bytes of the Data packets published through this node",
    "objects": "object versions published through this node",
    "object_bytes": "bytes of published objects, and of uploads in progress (reserved)",
    "contributions": "contribution rounds held now",
    "contribution_bytes": "bytes of contributions held (counted against contrib_store_mb)",
    "result_shm_files": "aggregates kept in memory files for local ranks (at most 64, 10 s each)",
    "result_shm_bytes": "bytes of those files (at most 1 GiB)",
    "contributions_waiting": "contribution Interests held until a member contributes, not yet expired",
    "groups": "reduction groups known",
    "shm_mappings": "shared-memory files mapped now (each holds one descriptor)",
    "fn_active": "function calls being handshaked or run",
    "fn_jobs": "function calls answered with a thunk, running or with their result retained",
    "fn_sessions": "function-call session keys held",
    "fn_memo": "pure function results remembered",
    "fn_memo_bytes": "bytes of pure function results remembered",
    "fn_ref_bytes": "bytes of named arguments (icnd.Ref, futures' results) held by running calls",
    "lsdb_entries": "records in the link-state database (this node's own included)",
    "lsdb_bytes": "bytes of the link-state database",
    "routing_neighbors_up": "routing neighbours whose adjacency is up",
    # --- each face (face/list's counters) ---
    "face_in_packets": "packets received on the face",
    "face_out_packets": "packets sent on the face",
    "face_in_bytes": "bytes received on the face",
    "face_out_bytes": "bytes sent on the face",
    "face_send_drops": "packets the face could not send (queue full, closed, too large, send error)",
    "face_decode_errors": "packets received on the face that did not decode",
    "face_framing_errors": "times the face's stream framing broke (the face then closed)",
    "face_recv_drops": "packets received before the face ran, beyond its holding bound",
    "face_frame_timeouts": "times a partial stream frame did not complete in time (the face then closed)",
    "face_fds_received": "file descriptors a local application passed on the face (shared memory)",
    "face_fds_refused": "file descriptors received on the face and closed unused",
}


def describe(key: str) -> str:
    """The HELP text of the figure `key` (module docstring); `MISSING` for a key the table lacks."""
    return HELP.get(key, MISSING)
