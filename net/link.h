/* net-link.h - links, addresses and network namespaces over rtnetlink
 * (libmnl), in process: no `ip` commands.
 *
 * A box's network namespace is made by the daemon before the container
 * starts (a thread unshares CLONE_NEWNET and bind-mounts its namespace on a
 * file under RUN/netns), configured there, and handed to crun by path. So
 * the box's first process already has its address, and teardown does not
 * depend on finding the box's PID 1.
 *
 * Addresses are IPv4, host byte order. Every function returns 0 or -errno
 * with the reason in err (where it takes one). None takes a lock; callers
 * serialise work on one box.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* Creates bridge name if absent, gives it addr/prefix, brings it up. An
 * existing link of that name is reused (its address set again). The
 * bridge's MAC address is pinned to the one it has, so it no longer follows
 * its ports as boxes come and go. */
int link_bridge_ensure(const char *name, uint32_t addr, unsigned prefix, pd_error *err);

/* Deletes a link by name; a missing one is success. */
int link_delete(const char *name);

/* Makes a new network namespace bound at path (the file is created) with
 * its loopback up. -EEXIST if path is already a namespace. */
int link_netns_create(const char *path, pd_error *err);

/* True when a namespace is bound on path. */
bool link_netns_is_bound(const char *path);

/* Unbinds and removes path; a missing one is success. The namespace itself
 * goes when its last process does. */
int link_netns_remove(const char *path);

/* The MAC address of the box whose address is addr: 02:70 (locally
 * administered, unicast) then the address's four bytes. Known to the
 * daemon without asking the box, so its bridge port can be pinned to it. */
void link_box_mac(uint32_t addr, uint8_t mac[6]);

/* Creates veth host_name on bridge (a pinned port, see
 * link_box_port_pin(), up) whose peer is eth0 in the namespace bound at
 * ns_path, with MAC mac, addr/prefix and a default route via gateway. A leftover link called
 * host_name is deleted first. On failure nothing is left behind. */
int link_box_add(const char *bridge, const char *host_name, const char *ns_path, uint32_t addr,
		 const uint8_t mac[6], unsigned prefix, uint32_t gateway, pd_error *err);

/* Pins the bridge port host_name (a box's host-side veth) to the box's
 * MAC: the port is isolated, learns nothing, gets no flooded unicast frame,
 * and the bridge's forwarding database holds a static entry for mac on it.
 * Doing it again changes nothing. The entry goes with the port. */
int link_box_port_pin(const char *host_name, const uint8_t mac[6], pd_error *err);

/* Sets the MAC of eth0 in the namespace bound at ns_path (a box that runs
 * since before MACs were pinned). */
int link_box_set_mac(const char *ns_path, const uint8_t mac[6], pd_error *err);

/* True when a link of that name exists in the daemon's namespace. */
bool link_exists(const char *name);

/* Deletes the connection tracking entries (the daemon's namespace) whose
 * original source is addr: a stopped box's flows, so that its address,
 * given to the next box, inherits no "established" connection that its
 * policy would not allow. *ret_n (may be NULL): how many went. Missing
 * conntrack support is -EPROTONOSUPPORT or the like (nothing to forget). */
int link_conntrack_forget(uint32_t addr, size_t *ret_n);
/* The same for addr's flows other than TCP (UDP, ICMP...): those have no
 * end the kernel sees, so a flow a looser policy let in would stay
 * "established" for as long as packets keep it alive (a new process's
 * ping with the same id, a container at the same address). A policy
 * change forgets them; TCP connections finish as the policy says. */
int link_conntrack_forget_non_tcp(uint32_t addr, size_t *ret_n);
