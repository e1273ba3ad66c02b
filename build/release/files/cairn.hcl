# cairn's configuration on this machine. The agent reads every .hcl and
# .json file in /etc/cairn.d in name order (a later file wins), so keep
# this one and add yours beside it, e.g. 10-cluster.hcl. Reload with
# "systemctl reload cairn" (what a reload changes: docs/install.md).
# This file is a dpkg conffile: an upgrade never overwrites your edits.
#
# As shipped, the agent is a client on loopback only: it serves DNS on
# 127.0.0.1:8600 and the HTTP API on 127.0.0.1:8500, and joins no one.

data_dir = "/var/lib/cairn"

# datacenter = "dc1"
# domain     = "cluster"

# The address cluster traffic (server RPC 8300, gossip 8301/8302) binds to
# and other nodes reach this one at: set it to this machine's LAN address.
# bind_addr = "10.0.0.11"

# The address the DNS server and the HTTP API listen on.
# client_addr = "127.0.0.1"

# Agents to join (any agent of the datacenter; retried until one answers).
# retry_join = ["10.0.0.11", "10.0.0.12", "10.0.0.13"]

# On the 3 or 5 servers of a datacenter:
# server           = true
# bootstrap_expect = 3

# Gossip encryption, the same key on every agent ("cairn keygen").
# encrypt = "..."

# Where DNS questions for names outside cairn's zones go.
# recursors = ["1.1.1.1"]

# log_level = "info"
