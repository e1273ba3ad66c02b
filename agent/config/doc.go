// Package config is the user-facing configuration of a cairn agent: the
// Config type, its defaults (Default), its validation naming the file key
// or flag of every bad value (Validate, FieldError), and the HCL/JSON
// config file loader (LoadFile).
//
// Config nests the configurations of the components the agent builds —
// zones.Config (TTLs, SOA, node metadata TXT), resolver.Config (answer
// limits, UDP size, truncation, recursors) and cache.Config (the DNS
// cache's size, idle timeout and serve-stale window) — each defaulted by
// its package's DefaultConfig, the one place its defaults live. The file
// keys (dns_config { max_stale = "24h" … }) and the CLI's flags map onto
// the nested fields; the agent passes them on, filling in only what it
// derives itself (domain, datacenter, listen addresses, the name server
// address). The hcl tags of the file structs (fileConfig and the blocks
// it nests) are the one list of file keys: a file is checked against them
// before it is decoded, so an unknown key or a value of the wrong type is
// an error naming its dotted key (strict.go).
//
// The fields that are the agent's own (node name, datacenter, addresses,
// ports, data dir, clustering, gossip encryption and timers, checks and
// anti-entropy timing) are Config's top-level fields.
package config
