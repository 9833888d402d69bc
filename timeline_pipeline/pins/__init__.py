"""Pins from the chat (docs/pins.md): a curator's pin reaction makes a message a human,
confirmed timeline entry; taking the reaction back hides it."""
