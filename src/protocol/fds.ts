/** The exec protocol's descriptors (SPEC): fd 3 carries controls from the daemon, fd 4 carries the wrapper's events back. */
export const CONTROL_FD = 3;
export const EVENT_FD = 4;
