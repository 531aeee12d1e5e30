// The part of core/v1 SecurityContext a KVCacheBackend member group may set; the member renderer merges
// it onto the context the group's transport needs.
import { AtomicList, StringEnum, Type } from './schema.ts';

const profileTypes = ['Unconfined', 'RuntimeDefault', 'Localhost'] as const;

const localhostProfile = (description: string) =>
  Type.Optional(Type.String({ maxLength: 4096, description }));

export const SecurityContext = Type.Object(
  {
    capabilities: Type.Optional(
      Type.Object(
        {
          add: Type.Optional(
            AtomicList(Type.String({ maxLength: 64 }), 64, {
              description:
                'Capabilities to add, for example NET_ADMIN; joined with the IPC_LOCK and SYS_RESOURCE an RDMA or EFA group always gets.',
            }),
          ),
          drop: Type.Optional(
            AtomicList(Type.String({ maxLength: 64 }), 64, {
              description: 'Capabilities to drop, taken as declared, for example ALL.',
            }),
          ),
        },
        { description: 'Linux capabilities to add to or drop from the container runtime default.' },
      ),
    ),
    privileged: Type.Optional(
      Type.Boolean({
        description:
          'Runs the member privileged when true. No transport needs it: RDMA and EFA get capabilities and devices instead.',
      }),
    ),
    runAsUser: Type.Optional(
      Type.Integer({
        format: 'int64',
        description: "User id the member runs as; unset keeps the image's user (65532 for the store image).",
      }),
    ),
    runAsGroup: Type.Optional(
      Type.Integer({
        format: 'int64',
        description: "Primary group id the member runs as; unset keeps the image's group.",
      }),
    ),
    runAsNonRoot: Type.Optional(
      Type.Boolean({ description: 'When true, the kubelet refuses to start the member as user 0.' }),
    ),
    readOnlyRootFilesystem: Type.Optional(
      Type.Boolean({ description: "Mounts the container's root filesystem read-only when true." }),
    ),
    allowPrivilegeEscalation: Type.Optional(
      Type.Boolean({
        description: 'Whether a process may gain more privileges than its parent (no_new_privs when false).',
      }),
    ),
    procMount: Type.Optional(
      Type.String({
        maxLength: 32,
        description: 'Default or Unmasked: how /proc is mounted in the container.',
      }),
    ),
    seLinuxOptions: Type.Optional(
      Type.Object(
        {
          user: Type.Optional(Type.String({ maxLength: 256, description: 'SELinux user label.' })),
          role: Type.Optional(Type.String({ maxLength: 256, description: 'SELinux role label.' })),
          type: Type.Optional(Type.String({ maxLength: 256, description: 'SELinux type label.' })),
          level: Type.Optional(Type.String({ maxLength: 256, description: 'SELinux level label.' })),
        },
        { description: 'SELinux labels for the container; unset lets the runtime choose.' },
      ),
    ),
    seccompProfile: Type.Optional(
      Type.Object(
        {
          type: StringEnum(profileTypes, {
            description: 'Unconfined, RuntimeDefault, or Localhost (a profile file on the node).',
          }),
          localhostProfile: localhostProfile(
            "Path of the profile file, relative to the kubelet's seccomp profile directory; only with type Localhost.",
          ),
        },
        { description: 'The seccomp profile the member runs under.' },
      ),
    ),
    appArmorProfile: Type.Optional(
      Type.Object(
        {
          type: StringEnum(profileTypes, {
            description: 'Unconfined, RuntimeDefault, or Localhost (a profile loaded on the node).',
          }),
          localhostProfile: localhostProfile(
            'Name of the profile loaded on the node; only with type Localhost.',
          ),
        },
        { description: 'The AppArmor profile the member runs under.' },
      ),
    ),
  },
  {
    description:
      "Security settings of the member container, merged over what the transport needs: a field set here wins, and capabilities.add is joined with the fabric's IPC_LOCK and SYS_RESOURCE.",
  },
);
