"""Window discovery: sensor tick time against history size (O(uncovered), not O(history))."""
