// Environment the member renderer owns, which admission therefore refuses in a group's extraEnv.

/** DRAM members must not grab an accelerator a device runtime would otherwise hand them. */
export const visibleDeviceVars = [
  'AMD_VISIBLE_DEVICES',
  'CAMBRICON_VISIBLE_DEVICES',
  'IX_VISIBLE_DEVICES',
  'MTHREADS_VISIBLE_DEVICES',
  'NVIDIA_VISIBLE_DEVICES',
];
