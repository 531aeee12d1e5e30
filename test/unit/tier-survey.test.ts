// TierWasEmpty from the first members' survey, decided once; and which tier paths count as shared.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod as PodKind } from 'kubernetes-types/core/v1.js';
import type { KubeObject } from '../../src/kube/object.ts';

type Pod = KubeObject<PodKind>;

import { pathsOverlap, spokenDuration } from '../../src/controllers/backend/tier-cleanup.ts';
import {
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

describe('pathsOverlap', () => {
  it('treats equal and nested paths as shared, siblings with a common prefix as not', () => {
    assert.equal(pathsOverlap('/var/lib/kvcache', '/var/lib/kvcache'), true);
    assert.equal(pathsOverlap('/var/lib/kvcache', '/var/lib/kvcache/a'), true);
    assert.equal(pathsOverlap('/var/lib', '/var/lib/kvcache'), true);
    assert.equal(pathsOverlap('/var/lib/kvcache', '/var/lib/kvcache-2'), false);
  });
});

describe('spokenDuration', () => {
  it('says whole minutes in minutes and anything else in seconds', () => {
    assert.equal(spokenDuration(5 * 60_000), '5 minutes');
    assert.equal(spokenDuration(60_000), '1 minute');
    assert.equal(spokenDuration(8000), '8 s');
  });
});
