"""One job crawled by several processes: who owns a host, hand-off of URLs between
partitions, control commands relayed to each."""
