// The project's image archives load with the usual tools: skopeo reads them as OCI archives and as
// Docker archives (the format `docker load` reads), and copies them with every digest checked, so a
// user can push them to a registry. (ctr import is what every local cluster node starts from.)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildImages } from '../../images/build.ts';
import { images } from '../../images/recipes.ts';

const skopeo = (...args: string[]) => execFileSync('skopeo', args, { encoding: 'utf8', maxBuffer: 16 << 20 });

describe('image archives', async () => {
  const built = await buildImages();

  for (const image of images) {
    it(`${image.name}: read as an OCI and a Docker archive, copied with digests checked`, () => {
      const archive = built.find((b) => b.name === image.name)!.archive;
      for (const reference of image.references) {
        // An OCI archive names each image by its tag (org.opencontainers.image.ref.name).
        const tag = reference.slice(reference.lastIndexOf(':') + 1);
        const config = JSON.parse(skopeo('inspect', '--config', `oci-archive:${archive}:${tag}`)) as {
          config: { User?: string; Entrypoint?: string[] };
          rootfs: { diff_ids: string[] };
        };
        assert.equal(config.rootfs.diff_ids.length, image.layers.length);
        assert.equal(config.config.User, image.user);
        assert.deepEqual(config.config.Entrypoint, image.entrypoint);
        const short = reference.replace(/^docker\.io\//, '');
        const docker = JSON.parse(skopeo('inspect', `docker-archive:${archive}:${short}`)) as {
          Layers: string[];
        };
        assert.equal(docker.Layers.length, image.layers.length, `${short} in the Docker archive`);
      }
      const out = mkdtempSync(join(tmpdir(), 'kvpool-image-copy-'));
      try {
        const tag = image.references[0]!.slice(image.references[0]!.lastIndexOf(':') + 1);
        skopeo('copy', '--quiet', `oci-archive:${archive}:${tag}`, `oci:${out}:copy`);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  }
});
