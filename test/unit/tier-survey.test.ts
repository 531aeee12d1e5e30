// TierWasEmpty from the first members' survey, decided once; and which tier paths count as shared.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod as PodKind } from 'kubernetes-types/core/v1.js';
import type { KubeObject } from '../../src/kube/object.ts';

type Pod = KubeObject<PodKind>;

import { pathsOverlap, spokenDuration } from '../../src/controllers/backend/tier-cleanup.ts';
import {
  decideTierRefusal,
  decideTierWasEmpty,
  firstMembers,
  readSurvey,
  type SurveyReading,
} from '../../src/controllers/backend/tier-survey.ts';

const reading = (node: string, entries: number, control = 20): SurveyReading => ({
  pod: `m-${node}`,
  node,
  entries,
  control,
});

function surveyedPod(node: string, message: string, created = '2026-11-29T10:00:00Z'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `m-${node}`, creationTimestamp: created },
    spec: { nodeName: node },
    status: {
      initContainerStatuses: [{ name: 'local-disk-survey', state: { terminated: { exitCode: 0, message } } }],
    },
  } as Pod;
}

describe('readSurvey', () => {
  it('reads entries and control from the survey container’s termination message', () => {
    assert.deepEqual(readSurvey(surveyedPod('n1', 'entries=3 control=21')), {
      pod: 'm-n1',
      node: 'n1',
      entries: 3,
      control: 21,
    });
    assert.equal(readSurvey(surveyedPod('n1', 'garbage')), undefined);
  });

  it('reads the verdict and the marker the survey found, and a crash-looping survey’s last run', () => {
    assert.deepEqual(readSurvey(surveyedPod('n1', 'entries=2 control=21 tier=refused marker=uid-b')), {
      pod: 'm-n1',
      node: 'n1',
      entries: 2,
      control: 21,
      tier: 'refused',
      marker: 'uid-b',
    });
    const waiting = surveyedPod('n1', '');
    waiting.status!.initContainerStatuses = [
      {
        name: 'local-disk-survey',
        state: { waiting: { reason: 'CrashLoopBackOff' } },
        lastState: { terminated: { exitCode: 1, message: 'entries=2 control=21 tier=refused marker=none' } },
      } as NonNullable<NonNullable<Pod['status']>['initContainerStatuses']>[number],
    ];
    assert.deepEqual(
      [readSurvey(waiting)?.tier, readSurvey(waiting)?.marker],
      ['refused', undefined],
      'marker=none is no marker',
    );
  });

  it('counts only Pods created within 30 minutes of the backend', () => {
    const early = surveyedPod('n1', 'entries=0 control=5', '2026-11-29T10:10:00Z');
    const late = surveyedPod('n2', 'entries=0 control=5', '2026-11-29T11:00:00Z');
    assert.deepEqual(
      firstMembers([early, late], '2026-11-29T10:00:00Z').map((p) => p.spec?.nodeName),
      ['n1'],
    );
  });
});

describe('decideTierWasEmpty', () => {
  it('is True/Empty only once every desired node reported an empty directory', () => {
    assert.equal(
      decideTierWasEmpty([reading('n1', 0)], 2, undefined),
      undefined,
      'undecided while a node is missing',
    );
    const d = decideTierWasEmpty([reading('n1', 0), reading('n2', 0)], 2, undefined);
    assert.deepEqual([d?.status, d?.reason], ['True', 'Empty']);
  });

  it('is False/PreexistingContent as soon as one node held entries, naming node: count', () => {
    const d = decideTierWasEmpty([reading('n1', 0), reading('n2', 7)], 3, undefined);
    assert.deepEqual([d?.status, d?.reason], ['False', 'PreexistingContent']);
    assert.match(d!.message, /n2: 7/);
  });

  it('discards readings with no control entries or an unreadable directory', () => {
    assert.equal(decideTierWasEmpty([reading('n1', 0, 0), reading('n2', -1)], 2, undefined), undefined);
  });

  it('never revisits a decision', () => {
    const previous = {
      type: 'TierWasEmpty',
      status: 'True' as const,
      reason: 'Empty',
      message: 'was empty',
      lastTransitionTime: '2026-11-29T10:00:00Z',
    };
    const d = decideTierWasEmpty([reading('n1', 9)], 1, previous);
    assert.deepEqual([d?.status, d?.reason], ['True', 'Empty']);
  });
});

describe('decideTierRefusal', () => {
  const field = 'spec.connection.managed.members[0].localDisks[0]';
  const refused = (node: string, marker?: string, tier: 'refused' | 'unremovable' = 'refused') => ({
    ...reading(node, 3),
    tier,
    ...(marker ? { marker } : {}),
  });

  it('is False/ForeignContentRefused naming the nodes, the marker, the field and both fixes', () => {
    const d = decideTierRefusal([reading('n1', 0), refused('n2'), refused('n3', 'uid-b')], field, 'uid-a');
    assert.deepEqual([d?.type, d?.status, d?.reason], ['TierWasEmpty', 'False', 'ForeignContentRefused']);
    assert.match(d!.message, /n2: 3 \(no marker\)/);
    assert.match(d!.message, /n3: 3 \(marked by backend UID uid-b\)/);
    assert.match(
      d!.message,
      /set spec\.connection\.managed\.members\[0\]\.localDisks\[0\]\.foreignContent: Remove/,
    );
    assert.match(d!.message, /write the line uid=uid-a to \.kvpool-tier/);
  });

  it('says when Remove could not remove the files', () => {
    const d = decideTierRefusal([refused('n2', undefined, 'unremovable')], field, 'uid-a');
    assert.match(d!.message, /foreignContent is Remove but the files could not be removed on n2/);
  });

  it('is nothing while no member refused', () => {
    assert.equal(
      decideTierRefusal([reading('n1', 4), { ...reading('n2', 2), tier: 'own' }], field, 'u'),
      undefined,
    );
  });
});

describe('decideTierWasEmpty with markers', () => {
  it('counts a directory this backend marked as its own, not as earlier content', () => {
    const d = decideTierWasEmpty([{ ...reading('n1', 5), tier: 'own' }, reading('n2', 0)], 2, undefined);
    assert.deepEqual([d?.status, d?.reason], ['True', 'Empty']);
  });

  it('waits for every node’s survey before ForeignContentRemoved, so the message names every node emptied', () => {
    const removed = (node: string) => ({ ...reading(node, 2), tier: 'removed' as const, marker: 'uid-b' });
    assert.equal(decideTierWasEmpty([removed('n1')], 2, undefined), undefined);
    const d = decideTierWasEmpty([removed('n1'), removed('n2')], 2, undefined);
    assert.equal(d?.reason, 'ForeignContentRemoved');
    assert.match(d!.message, /n1: 2 \(marked by backend UID uid-b\), n2: 2 \(marked by backend UID uid-b\)/);
  });

  it('is False/ForeignContentRemoved when members emptied another backend’s files', () => {
    const d = decideTierWasEmpty([{ ...reading('n1', 5), tier: 'removed', marker: 'uid-b' }], 1, undefined);
    assert.deepEqual([d?.status, d?.reason], ['False', 'ForeignContentRemoved']);
    assert.match(d!.message, /n1: 5 \(marked by backend UID uid-b\)/);
  });

  it('decides again once a refusal is resolved', () => {
    const previous = {
      type: 'TierWasEmpty',
      status: 'False' as const,
      reason: 'ForeignContentRefused',
      message: 'refused',
      lastTransitionTime: '2026-11-29T10:00:00Z',
    };
    const d = decideTierWasEmpty([{ ...reading('n1', 0), tier: 'new' }], 1, previous);
    assert.deepEqual([d?.status, d?.reason], ['True', 'Empty']);
  });
});

describe('pathsOverlap', () => {
  it('treats equal and nested paths as shared, siblings with a common prefix as not', () => {
    assert.equal(pathsOverlap('/var/lib/kvcache', '/var/lib/kvcache'), true);
    assert.equal(pathsOverlap('/var/lib/kvcache', '/var/lib/kvcache/a'), true);
    assert.equal(pathsOverlap('/var/lib', '/var/lib/kvcache'), true);
    assert.equal(pathsOverlap('/var/lib/kvcache', '/var/lib/kvcache-2'), false);
  });

  it('compares path components, whatever the spelling (a stored path may predate the canonical rule)', () => {
    assert.equal(pathsOverlap('/data/kv', '/data/kv2'), false);
    assert.equal(pathsOverlap('/data/kv2', '/data/kv'), false);
    assert.equal(pathsOverlap('/data/kv/', '/data/kv'), true);
    assert.equal(pathsOverlap('/data//kv', '/data/kv'), true);
    assert.equal(pathsOverlap('/data/./kv', '/data/kv/a'), true);
    assert.equal(pathsOverlap('/data/kv/.', '/data//kv'), true);
    assert.equal(pathsOverlap('//data', '/data/kv'), true);
    assert.equal(pathsOverlap('/', '/data/kv'), true);
    assert.equal(pathsOverlap('/data//kv2', '/data/kv'), false);
  });
});

describe('spokenDuration', () => {
  it('says whole minutes in minutes and anything else in seconds', () => {
    assert.equal(spokenDuration(5 * 60_000), '5 minutes');
    assert.equal(spokenDuration(60_000), '1 minute');
    assert.equal(spokenDuration(8000), '8 s');
  });
});
