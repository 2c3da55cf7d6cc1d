/** Host names the config treats as this machine. */

/** Hosts allowed to serve over plain http or ldap (development and tests): nothing leaves the machine. */
export const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;
