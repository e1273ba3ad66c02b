# cairn's configuration in its container image. The agent reads every .hcl
# and .json file in /etc/cairn.d in name order (a later file wins): mount
# yours beside this one, or pass flags after the image name.

data_dir = "/var/lib/cairn"

# A container's loopback is its own: listen and gossip on its interfaces,
# and advertise its private address.
bind_addr   = "0.0.0.0"
client_addr = "0.0.0.0"
