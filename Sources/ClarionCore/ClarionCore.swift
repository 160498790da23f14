/// The pure domain. Imports no C module, opens no socket, reads no clock.
public enum ClarionCore {}
