module github.com/tern-dns/tern

go 1.26.8

require (
	github.com/miekg/dns v1.1.73
	github.com/pelletier/go-toml/v2 v2.4.3
	golang.org/x/net v0.63.0
	golang.org/x/sys v0.50.0
)
