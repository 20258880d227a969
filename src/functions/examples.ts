import { z } from 'zod';
import { defineLlmFunction } from './define-llm-function';

export const summarize = defineLlmFunction({
  name: 'summarize',
  prompt: 'Summarize the following text in at most {words} words and list up to five keywords.\n\nText:\n{text}',
  input: z.object({ text: z.string().min(1), words: z.number().int().positive().default(30) }),
  output: z.object({ summary: z.string().min(1), keywords: z.array(z.string()).max(5) }),
});

export const classifySentiment = defineLlmFunction({
  name: 'classify_sentiment',
  prompt:
    'Classify the sentiment of this text as positive, negative or neutral, with your confidence from 0 to 1.\n\nText:\n{text}',
  input: z.object({ text: z.string().min(1) }),
  output: z.object({ sentiment: z.enum(['positive', 'negative', 'neutral']), confidence: z.number().min(0).max(1) }),
});

export const exampleFunctions = [summarize, classifySentiment];
